//! A fresh, hermetic environment per test: a temporary folder with its own HOME, no global
//! or system git config, no DREAM_* variables from the caller, no colour, and a fixed clock
//! passed with --now. Helpers to write inbox lines, run `dream`, and snapshot a repo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use sha2::{Digest, Sha256};

/// The evening the shipped sample stream ends.
pub const SAMPLE_NOW: &str = "2026-11-06T21:00:00Z";

pub struct Env {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub repo: PathBuf,
    /// DREAM_* variables every command of this environment gets.
    vars: std::sync::Mutex<Vec<(String, String)>>,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        Env {
            repo: root.join("memory-repo"),
            _dir: dir,
            root,
            home,
            vars: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Give every later command of this environment the variable `key=value`.
    pub fn set_var(&self, key: &str, value: &str) {
        self.vars.lock().unwrap().push((key.into(), value.into()));
    }

    /// The variables [`Env::set_var`] set.
    pub fn vars(&self) -> Vec<(String, String)> {
        self.vars.lock().unwrap().clone()
    }

    /// Turn the episodic tier off, so that what lacks corroboration goes to review as a
    /// card (`episodes.enabled = false`): for tests about reviewing cards.
    pub fn episodes_off(&self) {
        self.set_var("DREAM_EPISODES_ENABLED", "false");
    }

    /// A `dream` command in this environment, working on this env's repo.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd())
    }

    /// [`Env::cmd`] as a `std::process::Command`: to start in the background, or for what
    /// `assert_cmd` cannot do (point stdout or stderr at a file such as /dev/full). The
    /// environment is hermetic: no DREAM_ or GIT_ variable of the caller, a fake HOME, no
    /// git configuration, and the variables [`Env::set_var`] set.
    pub fn std_cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("dream"));
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("DREAM_") || k.starts_with("GIT_") {
                c.env_remove(k);
            }
        }
        c.env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("COPILOT_HOME")
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            // Days are local days (episodes): the tests' clock is UTC unless one sets TZ.
            .env("TZ", "UTC")
            .env("DREAM_REPO", &self.repo)
            .current_dir(&self.root);
        for (k, v) in self.vars() {
            c.env(k, v);
        }
        c
    }

    /// `dream init` the repo and return its path.
    pub fn init(&self) -> &Path {
        self.cmd().arg("init").arg(&self.repo).assert().success();
        &self.repo
    }

    /// Run dream with these arguments.
    pub fn dream(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("dream runs")
    }

    /// `dream run --now NOW --json`, expecting success; returns the report.
    pub fn run_cycle(&self, now: &str) -> serde_json::Value {
        let out = self.dream(&["run", "--now", now, "--json"]);
        assert!(
            out.status.success(),
            "dream run failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout).expect("the report is JSON")
    }

    /// Write (replace) an inbox file.
    pub fn write_inbox(&self, name: &str, text: &str) {
        let path = self.repo.join("events").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Append to an inbox file.
    pub fn append_inbox(&self, name: &str, text: &str) {
        use std::io::Write;
        let path = self.repo.join("events").join(name);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Copy the shipped sample events into the inbox.
    pub fn add_sample_events(&self) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/events");
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            std::fs::copy(&p, self.repo.join("events").join(p.file_name().unwrap())).unwrap();
        }
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo.join(rel)).unwrap_or_default()
    }

    /// Every commit of the repo, newest first, as (subject, full message).
    pub fn commits(&self) -> Vec<(String, String)> {
        let repo = git2::Repository::open(&self.repo).unwrap();
        let mut walk = repo.revwalk().unwrap();
        walk.push_head().unwrap();
        walk.map(|id| {
            let c = repo.find_commit(id.unwrap()).unwrap();
            (
                c.summary().unwrap_or("").to_string(),
                c.message().unwrap_or("").to_string(),
            )
        })
        .collect()
    }

    /// Content hash of every file under the repo (including .git and .dream).
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.repo.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let bytes = std::fs::read(&p).unwrap();
                    let rel = p.strip_prefix(&self.repo).unwrap().display().to_string();
                    out.insert(rel, format!("{:x}", Sha256::digest(&bytes)));
                }
            }
        }
        out
    }

    /// Active fact lines of all memory blocks.
    pub fn facts(&self) -> Vec<String> {
        ["persona", "human", "episodes", "scratch"]
            .iter()
            .flat_map(|b| {
                self.read(&format!("memory/{b}.md"))
                    .lines()
                    .filter(|l| l.starts_with("- "))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Texts of pending review cards.
    pub fn cards(&self) -> Vec<String> {
        let mut out: Vec<String> = self.pending().into_iter().map(|c| c.text).collect();
        out.sort();
        out
    }

    /// Pending review cards, parsed.
    pub fn pending(&self) -> Vec<dream_core::schema::Card> {
        let dir = self.repo.join("review");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push(dream_core::schema::Card::parse(&text).unwrap());
            }
        }
        out
    }
}

/// One event line.
pub fn event(ts: &str, session: &str, text: &str) -> String {
    serde_json::json!({"ts": ts, "kind": "message", "actor": "user", "session": session, "text": text}).to_string() + "\n"
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
