//! Project scope: sessions in two projects (real git repositories, one with a worktree made
//! with git2). A fact learned in one project belongs to it and is marked so in its line; a
//! fact said in both, or about the owner, is global; a session in a project (`--project`,
//! the SessionStart hook's stdin, MCP recall) sees the global facts and its project's, not
//! the other's; worktrees of one repository share; a person moves a fact by editing its
//! `scope` key.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{stderr, stdout, Env};

const NOW: &str = "2026-11-06T21:00:00Z";

/// A git repository with one commit (a worktree needs a commit to check out).
fn repo_with_commit(path: &Path) -> git2::Repository {
    std::fs::create_dir_all(path).unwrap();
    let repo = git2::Repository::init(path).unwrap();
    {
        let sig = git2::Signature::now("Ana", "ana@example.com").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "first", &tree, &[])
            .unwrap();
    }
    repo
}

/// A user's line said in `cwd` on `day` of November.
fn said(id: &str, day: u32, cwd: &Path, text: &str) -> String {
    json!({"id": id, "ts": format!("2026-11-{day:02}T10:00:00Z"), "kind": "message",
        "actor": "user", "session": format!("s-{id}"), "text": text,
        "meta": {"cwd": cwd.display().to_string()}})
    .to_string()
        + "\n"
}

/// Three restatements on three days, in the folders given.
fn thrice(id: &str, text: &str, cwds: [&Path; 3]) -> String {
    let lower = text[..1].to_lowercase() + &text[1..];
    [
        said(&format!("{id}-1"), 2, cwds[0], text),
        said(
            &format!("{id}-2"),
            3,
            cwds[1],
            &format!("As I said, {lower}"),
        ),
        said(
            &format!("{id}-3"),
            4,
            cwds[2],
            &format!("Reminder: {lower}"),
        ),
    ]
    .concat()
}

struct Projects {
    env: Env,
    shop: PathBuf,
    shop_tree: PathBuf,
    blog: PathBuf,
}

fn setup() -> Projects {
    let env = Env::new();
    env.init();
    let shop = env.root.join("src/shop");
    let repo = repo_with_commit(&shop);
    let shop_tree = env.root.join("src/shop-feature");
    repo.worktree("feature", &shop_tree, None).unwrap();
    let blog = env.root.join("src/blog");
    repo_with_commit(&blog);
    let shop_sub = shop.join("web/src");
    std::fs::create_dir_all(&shop_sub).unwrap();
    let lines = [
        // The shop's, said in the main folder, a subfolder and the worktree.
        thrice(
            "ship",
            "We deploy the shop with make ship and a canary.",
            [&shop, &shop_sub, &shop_tree],
        ),
        // The blog's.
        thrice(
            "zola",
            "We build the blog with zola and a custom theme.",
            [&blog, &blog, &blog],
        ),
        // Said in both projects: global.
        thrice(
            "hopper",
            "We test every release on the staging box hopper.",
            [&shop, &blog, &shop],
        ),
        // About the owner, said in one project: global.
        thrice(
            "answers",
            "I prefer short answers with the command first.",
            [&blog, &blog, &blog],
        ),
    ]
    .concat();
    env.write_inbox("agents.jsonl", &lines);
    env.run_cycle(NOW);
    Projects {
        env,
        shop: shop.canonicalize().unwrap(),
        shop_tree,
        blog: blog.canonicalize().unwrap(),
    }
}

fn context(env: &Env, args: &[&str]) -> String {
    let out = env.dream(&[&["context", "--now", NOW][..], args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn fact_line<'a>(facts: &'a [String], words: &str) -> &'a str {
    facts
        .iter()
        .find(|l| l.contains(words))
        .unwrap_or_else(|| panic!("no fact with {words:?}: {facts:#?}"))
}

#[test]
fn a_session_in_a_project_sees_its_facts_and_the_global_ones_not_another_project_s() {
    let p = setup();
    let facts = p.env.facts();
    // The scope is in the fact's line: the repository's folder, or none for global.
    let ship = fact_line(&facts, "make ship");
    assert!(
        ship.contains(&format!("scope={}", p.shop.display()))
            || ship.contains(&format!("scope=\"{}\"", p.shop.display())),
        "{ship}"
    );
    assert!(fact_line(&facts, "zola").contains("scope="));
    assert!(
        !fact_line(&facts, "hopper").contains("scope="),
        "said in both"
    );
    assert!(
        !fact_line(&facts, "short answers").contains("scope="),
        "about the owner"
    );

    let shop = context(&p.env, &["--project", &p.shop.display().to_string()]);
    assert!(
        shop.contains(&format!(
            "Scope: global facts and those of the project {}.",
            p.shop.display()
        )),
        "{shop}"
    );
    assert!(shop.contains("make ship"), "{shop}");
    assert!(
        shop.contains("hopper") && shop.contains("short answers"),
        "{shop}"
    );
    assert!(
        !shop.contains("zola"),
        "the blog's fact in the shop: {shop}"
    );

    let blog = context(&p.env, &["--project", &p.blog.display().to_string()]);
    assert!(blog.contains("zola") && blog.contains("hopper"), "{blog}");
    assert!(!blog.contains("make ship"), "{blog}");

    // Outside both projects: the global facts only.
    let elsewhere = context(&p.env, &[]);
    assert!(elsewhere.contains("hopper"), "{elsewhere}");
    assert!(
        !elsewhere.contains("make ship") && !elsewhere.contains("zola"),
        "{elsewhere}"
    );
    let every = context(&p.env, &["--every-project"]);
    assert!(
        every.contains("make ship") && every.contains("zola"),
        "{every}"
    );
}

#[test]
fn worktrees_of_one_repository_are_one_project() {
    let p = setup();
    // The fact was said in the main folder, a subfolder and the worktree: one project.
    let tree = context(&p.env, &["--project", &p.shop_tree.display().to_string()]);
    assert!(
        tree.contains(&format!("of the project {}.", p.shop.display())),
        "{tree}"
    );
    assert!(tree.contains("make ship"), "{tree}");
    assert!(!tree.contains("zola"), "{tree}");
}

#[test]
fn the_session_start_hook_reads_its_project_from_stdin_and_ignores_what_is_not_json() {
    let p = setup();
    let hook = |stdin: &str| {
        let out = p
            .env
            .cmd()
            .args(["context", "--now", NOW, "--hook", "claude-code"])
            .write_stdin(stdin.to_string())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let input = json!({"session_id": "abc", "cwd": p.shop_tree.display().to_string(),
        "source": "startup", "hook_event_name": "SessionStart"})
    .to_string();
    let shop = hook(&input);
    assert!(
        shop.contains("make ship") && shop.contains("hopper"),
        "{shop}"
    );
    assert!(!shop.contains("zola"), "{shop}");
    // Malformed input: the current folder's view (here no project: global facts only).
    for bad in ["{not json", "", "[1,2]", "{\"cwd\": 3}"] {
        let out = hook(bad);
        assert!(out.contains("hopper"), "{bad:?}: {out}");
        assert!(
            !out.contains("make ship") && !out.contains("zola"),
            "{bad:?}: {out}"
        );
    }
}

#[test]
fn a_person_moves_a_fact_between_scopes_by_editing_its_scope_key() {
    let p = setup();
    let path = p.env.repo.join("memory/scratch.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let shop = p.shop.display().to_string();
    let edited = text
        .replace(&format!("scope=\"{shop}\""), "scope=global")
        .replace(&format!("scope={shop}"), "scope=global");
    assert_ne!(edited, text, "the shop's fact is in scratch.md: {text}");
    std::fs::write(&path, edited).unwrap();
    p.env.run_cycle("2026-11-07T21:00:00Z");
    let blog = context(&p.env, &["--project", &p.blog.display().to_string()]);
    assert!(blog.contains("make ship"), "moved to global: {blog}");
    assert!(p
        .env
        .commits()
        .iter()
        .any(|(s, _)| s == "dream: record hand edits"));
}

/// `recall` over MCP from a server started in `folder`, with these extra arguments.
fn mcp_recall(env: &Env, folder: &Path, query: &str, extra: serde_json::Value) -> String {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("dream"));
        cmd.args([
            "--repo",
            &env.repo.display().to_string(),
            "--now",
            NOW,
            "mcp",
        ])
        .current_dir(folder)
        .env("HOME", &env.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("DREAM_REPO")
        .stderr(std::process::Stdio::null());
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let mut args = json!({"query": query, "limit": 20});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        let r = client
            .call_tool(
                CallToolRequestParams::new("recall")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
        client.cancel().await.unwrap();
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

#[test]
fn mcp_recall_searches_the_current_project_and_global_unless_asked_for_all() {
    let p = setup();
    let query = "how do we deploy the shop and build the blog with zola";
    let in_blog = mcp_recall(&p.env, &p.blog, query, json!({}));
    assert!(in_blog.contains("zola"), "{in_blog}");
    assert!(!in_blog.contains("make ship"), "{in_blog}");
    let all = mcp_recall(&p.env, &p.blog, query, json!({"scope": "all"}));
    assert!(all.contains("zola") && all.contains("make ship"), "{all}");
}
