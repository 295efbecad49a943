//! The documentation keeps its word: README.md is what a newcomer reads first and docs/ is
//! the reference, and both are only worth reading while what they say works. So:
//!
//! - every relative Markdown link in README.md, docs/*.md and the Markdown files under
//!   crates/ and models/ points at a file of this repository, and every `#anchor` at a
//!   heading of the file it names (GitHub's slugs);
//! - every `dream ...` command line in their shell code blocks (```sh, ```bash, ```shell,
//!   ```console) parses with the real command line (`dream::cli::Cli`), so a renamed
//!   subcommand or flag breaks this test, not a reader;
//! - README's walk-through ("Try it on the sample events") runs for real, line by line as a
//!   shell runs it, against the built binary in a fresh HOME, and leaves what README says;
//! - the test command README gives ("Run the tests") is the one `.ci/run` runs.
//!
//! Placeholders in documented command lines are substituted by one rule: `[...]` marks an
//! optional part, checked as given (the brackets dropped); a word in capitals (`NAME`,
//! `PATH`, `ID`, `N`, `HH:MM`) or in angle brackets (`<id>`) is a value: `N` becomes `1`,
//! `HH:MM` `07:00`, `KIND` `evening`, any other the word in lower case; `a|b` inside a word
//! is a choice, checked as its first. Comments, redirections and the commands a line pipes
//! into are left out; `cargo run -- ARGS` and `... -- dream ARGS` (as in `claude mcp add`)
//! are dream's command lines too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use regex::Regex;

use crate::util::{stderr, stdout, Env};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, docs/*.md, and every Markdown file under crates/ and models/ (crate READMEs,
/// model cards, provenance notes).
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    for dir in ["crates", "models"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "target") {
                        stack.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "md") {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A fenced code block: its info string's first word, the line its first line is on
/// (1-based), and its lines.
struct Block {
    lang: String,
    line: usize,
    lines: Vec<String>,
}

/// A Markdown document split into what is prose and what is code: `prose` is the text with
/// fenced blocks and inline code spans blanked out (same length, same line breaks, so an
/// offset still gives its line), `blocks` the fenced blocks, `headings` each heading's line
/// and text.
struct Doc {
    prose: String,
    blocks: Vec<Block>,
    headings: Vec<(usize, String)>,
}

fn blank(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect()
}

/// A fence opening or closing line: its character and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let c = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

fn parse(text: &str) -> Doc {
    let mut prose = String::new();
    let mut blocks = Vec::new();
    let mut headings = Vec::new();
    let mut open: Option<(char, usize, Block)> = None;
    let mut para = String::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if let Some((c, n, mut block)) = open.take() {
            match fence(line) {
                Some((c2, n2)) if c2 == c && n2 >= n && line.trim().chars().all(|x| x == c) => {
                    blocks.push(block)
                }
                _ => {
                    block.lines.push(line.trim_end_matches('\n').to_string());
                    open = Some((c, n, block));
                }
            }
            prose.push_str(&blank(line));
            continue;
        }
        if let Some((c, n)) = fence(line) {
            prose.push_str(&mask_code_spans(&std::mem::take(&mut para)));
            let info = line.trim().trim_start_matches(c).trim();
            let lang = info.split_whitespace().next().unwrap_or("").to_string();
            open = Some((
                c,
                n,
                Block {
                    lang,
                    line: i + 2,
                    lines: Vec::new(),
                },
            ));
            prose.push_str(&blank(line));
            continue;
        }
        let t = line.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with([' ', '\t', '\n']) {
            headings.push((
                i + 1,
                t[hashes..].trim().trim_end_matches('#').trim().to_string(),
            ));
        }
        para.push_str(line);
        if line.trim().is_empty() {
            prose.push_str(&mask_code_spans(&std::mem::take(&mut para)));
        }
    }
    prose.push_str(&mask_code_spans(&para));
    if let Some((_, _, block)) = open {
        blocks.push(block);
    }
    Doc {
        prose,
        blocks,
        headings,
    }
}

/// Blank out the inline code spans of one paragraph: a run of n backticks up to the next run
/// of exactly n (CommonMark); a run with no partner is literal.
fn mask_code_spans(para: &str) -> String {
    let chars: Vec<char> = para.chars().collect();
    let mut out = chars.clone();
    let run = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                for c in &mut out[i..j + n] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = j + n;
            }
            None => i += n,
        }
    }
    out.into_iter().collect()
}

/// GitHub's anchor for a heading: its rendered text (code spans, links and emphasis marks
/// dropped) in lower case, every character that is not a letter, digit, space, `-` or `_`
/// removed, spaces made `-`.
fn slug(heading: &str) -> String {
    let link = Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let text = link.replace_all(heading, "$1").replace(['`', '*'], "");
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a document has: its headings' slugs (a repeated one gets `-1`, `-2`, as on
/// GitHub) and explicit `<a id>` / `<a name>` anchors.
fn anchors(doc: &Doc) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, h) in &doc.headings {
        let s = slug(h);
        let mut candidate = s.clone();
        let mut n = 0;
        while out.contains(&candidate) {
            n += 1;
            candidate = format!("{s}-{n}");
        }
        out.insert(candidate);
    }
    let html = Regex::new(r#"<a\s+(?:id|name)="([^"]+)""#).unwrap();
    for c in html.captures_iter(&doc.prose) {
        out.insert(c[1].to_string());
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every relative link of a document: (line, target). Inline links and images
/// (`[text](target)`, also across a line break) and reference definitions
/// (`[label]: target`), outside code.
fn relative_links(doc: &Doc) -> Vec<(usize, String)> {
    let inline = Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).unwrap();
    let reference = Regex::new(r"(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)").unwrap();
    let mut out = Vec::new();
    for re in [&inline, &reference] {
        for c in re.captures_iter(&doc.prose) {
            let m = c.get(1).unwrap();
            let target = m.as_str();
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            out.push((line_of(&doc.prose, m.start()), target.to_string()));
        }
    }
    out.sort();
    out
}

/// What is wrong with one link of `file`, if anything.
fn check_link(file: &Path, target: &str) -> Option<String> {
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let path = path.replace("%20", " ");
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(&path)
    };
    let Ok(canonical) = resolved.canonicalize() else {
        return Some(format!("{} does not exist", rel(&resolved)));
    };
    if !canonical.starts_with(root().canonicalize().unwrap()) {
        return Some(format!(
            "{} is outside the repository (a clone has no such file)",
            resolved.display()
        ));
    }
    let anchor = anchor?;
    if canonical.extension().is_some_and(|x| x == "md") {
        let doc = parse(&std::fs::read_to_string(&canonical).unwrap());
        let known = anchors(&doc);
        if !known.contains(anchor) {
            return Some(format!(
                "{} has no heading with the anchor #{anchor}",
                rel(&canonical)
            ));
        }
    } else if !Regex::new(r"^L\d+(-L\d+)?$").unwrap().is_match(anchor) {
        return Some(format!(
            "#{anchor} on {}, which is not Markdown",
            rel(&canonical)
        ));
    }
    None
}

#[test]
fn a_heading_anchor_is_githubs_slug() {
    assert_eq!(
        slug("Checking the repository: `dream verify`"),
        "checking-the-repository-dream-verify"
    );
    assert_eq!(
        slug("dream's own events (`jsonl`)"),
        "dreams-own-events-jsonl"
    );
    assert_eq!(
        slug("An I/O error: EIO, ENOSPC, a failed fsync"),
        "an-io-error-eio-enospc-a-failed-fsync"
    );
    assert_eq!(
        slug("`retention.max_active_facts`"),
        "retentionmax_active_facts"
    );
    let doc = parse("# A\n\n```sh\n# not a heading\n```\n\n## A\n\nsee `[x](nowhere.md)` and [y](here.md#a-1)\n");
    assert_eq!(anchors(&doc), BTreeSet::from(["a".into(), "a-1".into()]));
    assert_eq!(relative_links(&doc), vec![(9, "here.md#a-1".to_string())]);
}

#[test]
fn every_relative_link_in_the_docs_points_at_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let doc = parse(&std::fs::read_to_string(&file).unwrap());
        for (line, target) in relative_links(&doc) {
            checked += 1;
            if let Some(why) = check_link(&file, &target) {
                broken.push(format!("{}:{line}: ({target}): {why}", rel(&file)));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
    // README links into every guide; fewer would mean the links are no longer found.
    assert!(checked >= 40, "only {checked} relative links found");
}

/// The shell languages whose code blocks hold command lines.
fn is_shell(lang: &str) -> bool {
    matches!(lang, "sh" | "bash" | "shell" | "console")
}

/// The logical lines of a shell block: continuation lines (`\` at the end) joined, a
/// `$ ` prompt dropped.
fn shell_lines(block: &Block) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in block.lines.iter().enumerate() {
        let line = raw.trim_end();
        let (n, mut text) = match pending.take() {
            Some((n, before)) => (n, before + " " + line.trim_start()),
            None => (block.line + i, line.trim_start().to_string()),
        };
        if let Some(rest) = text.strip_prefix("$ ") {
            text = rest.to_string();
        }
        if let Some(joined) = text.strip_suffix('\\') {
            pending = Some((n, joined.to_string()));
        } else {
            out.push((n, text));
        }
    }
    out.extend(pending);
    out
}

/// The line without its comment, cut into the commands it chains or pipes (`|` with a space
/// beside it, `||`, `&&`, `;`), quotes respected.
fn commands(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = if i > 0 { chars[i - 1] } else { ' ' };
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                cur.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                cur.push(c);
            }
            None if c == '#' && prev.is_whitespace() => break,
            None if (c == '&' && next == '&') || (c == '|' && next == '|') => {
                out.push(std::mem::take(&mut cur));
                i += 1;
            }
            None if c == ';' || (c == '|' && (prev.is_whitespace() || next.is_whitespace())) => {
                out.push(std::mem::take(&mut cur))
            }
            None => cur.push(c),
        }
        i += 1;
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A placeholder's sample value, by the rule in the module's comment.
fn substitute(word: &str) -> String {
    let word = word.trim_start_matches('[').trim_end_matches(']');
    let word = word.split('|').next().unwrap_or(word);
    let caps = Regex::new(r"^[A-Z][A-Z0-9_]*(:[A-Z]+)?$").unwrap();
    if let Some(inner) = word.strip_prefix('<').and_then(|w| w.strip_suffix('>')) {
        return inner.to_lowercase();
    }
    if !caps.is_match(word) {
        return word.to_string();
    }
    match word {
        "N" => "1".into(),
        "HH:MM" => "07:00".into(),
        "KIND" => "evening".into(),
        other => other.to_lowercase(),
    }
}

/// dream's arguments in one command, if it runs dream: `dream ARGS`, `cargo run -- ARGS`
/// (when it runs this package's binary), or `... -- dream ARGS`; environment assignments
/// before it and redirections after it left out.
fn dream_args(command: &str) -> Option<Vec<String>> {
    let words = shell_words::split(command).ok()?;
    let assignment = Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*=").unwrap();
    let words: Vec<String> = words
        .into_iter()
        .skip_while(|w| assignment.is_match(w))
        .collect();
    let args: Vec<String> = if words.first()? == "dream" {
        words[1..].to_vec()
    } else if words.len() > 2 && words[0] == "cargo" && words[1] == "run" {
        let dash = words.iter().position(|w| w == "--")?;
        let other = words[2..dash].iter().any(|w| {
            matches!(w.as_str(), "-p" | "--package" | "--example" | "--bin")
                || w.starts_with("--package=")
        });
        if other {
            return None;
        }
        words[dash + 1..].to_vec()
    } else {
        let at = words
            .windows(2)
            .position(|w| w[0] == "--" && w[1] == "dream")?;
        words[at + 2..].to_vec()
    };
    let redirect = Regex::new(r"^[0-9&]?>>?|^<").unwrap();
    let mut out = Vec::new();
    let mut skip = false;
    for w in args {
        if skip {
            skip = false;
            continue;
        }
        if let Some(m) = redirect.find(&w) {
            skip = m.end() == w.len();
            continue;
        }
        out.push(substitute(&w));
    }
    Some(out)
}

#[test]
fn placeholders_in_a_documented_command_take_sample_values() {
    assert_eq!(
        commands("printf '%s' 'a # b' | dream purge --stdin   # where it is"),
        vec!["printf '%s' 'a # b'", "dream purge --stdin"]
    );
    assert_eq!(
        dream_args("dream log [--cycle ID] [-n N] [--json]").unwrap(),
        ["log", "--cycle", "id", "-n", "1", "--json"]
    );
    assert_eq!(
        dream_args("DREAM_X=1 dream completions bash|zsh > ~/x").unwrap(),
        ["completions", "bash"]
    );
    assert_eq!(
        dream_args("claude mcp add --scope user dream -- dream --repo ~/memory mcp").unwrap(),
        ["--repo", "~/memory", "mcp"]
    );
    assert_eq!(dream_args("cargo run -- demo").unwrap(), ["demo"]);
    assert_eq!(dream_args("cargo run -p dream-core --example x -- y"), None);
    assert_eq!(dream_args("target/release/dream-bench --runs 5"), None);
}

#[test]
fn every_documented_dream_command_line_parses_with_the_real_cli() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let doc = parse(&std::fs::read_to_string(&file).unwrap());
        for block in doc.blocks.iter().filter(|b| is_shell(&b.lang)) {
            for (line, text) in shell_lines(block) {
                for command in commands(&text) {
                    let Some(args) = dream_args(&command) else {
                        continue;
                    };
                    checked += 1;
                    let argv = std::iter::once("dream".to_string()).chain(args.iter().cloned());
                    if let Err(e) = dream::cli::Cli::try_parse_from(argv) {
                        use clap::error::ErrorKind;
                        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                            continue;
                        }
                        let first = e.to_string();
                        let first = first.lines().next().unwrap_or("").to_string();
                        wrong.push(format!(
                            "{}:{line}: `{command}` (checked as `dream {}`): {first}",
                            rel(&file),
                            args.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "documented command lines the CLI refuses:\n  {}",
        wrong.join("\n  ")
    );
    assert!(checked >= 100, "only {checked} dream command lines found");
}

/// The first code block of `lang` in the README section whose heading has this slug.
fn readme_block(section: &str, lang: &str) -> (Doc, usize) {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let doc = parse(&text);
    let (at, _) = doc
        .headings
        .iter()
        .find(|(_, h)| slug(h) == section)
        .unwrap_or_else(|| panic!("README.md has no section #{section}"));
    let next = doc
        .headings
        .iter()
        .map(|(l, _)| *l)
        .find(|l| l > at)
        .unwrap_or(usize::MAX);
    let i = doc
        .blocks
        .iter()
        .position(|b| b.lang == lang && b.line > *at && b.line < next)
        .unwrap_or_else(|| panic!("README.md's section #{section} has no ```{lang} block"));
    (doc, i)
}

/// Run the first `sh` block of a README section as a shell runs it, in the clone, with the
/// built `dream` first on PATH and a fresh HOME; returns the environment, the script and
/// what it printed.
fn run_readme_section(section: &str) -> (Env, String, std::process::Output) {
    let (doc, i) = readme_block(section, "sh");
    let script = doc.blocks[i].lines.join("\n");
    let env = Env::new();
    let tmp = env.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // The hermetic environment every test's `dream` gets (a fresh HOME, no git or DREAM_
    // configuration of the caller), for a shell in the clone with the built `dream` first on
    // PATH, and no memory repository chosen yet.
    let dream = env.std_cmd();
    let mut sh = std::process::Command::new("sh");
    for (k, v) in dream.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let bin = assert_cmd::cargo::cargo_bin("dream");
    let path = std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = sh
        .env_remove("DREAM_REPO")
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .current_dir(root())
        .args(["-eux", "-c", &script])
        .output()
        .unwrap();
    (env, script, out)
}

/// README's "Several machines" and "A team" walk-throughs run on one computer as written,
/// and leave what they say: the laptop's (or Bo's) copy holds the facts its own or another
/// machine's sessions said, and the dreamer's status names every machine.
#[test]
fn readmes_machines_and_team_walk_throughs_run() {
    for (section, copy, dreamer, machines) in [
        ("several-machines", "laptop", "memory", &["laptop"][..]),
        (
            "a-team",
            "bo-team",
            "team",
            &["ana-laptop", "bo-desktop"][..],
        ),
    ] {
        let (env, _, out) = run_readme_section(section);
        assert!(
            out.status.success(),
            "README's #{section} failed (exit {:?}):\n{}\n{}",
            out.status.code(),
            stdout(&out),
            stderr(&out)
        );
        let said = stdout(&out);
        let facts = std::fs::read_to_string(env.home.join(copy).join("memory/human.md")).unwrap();
        assert!(
            facts.contains("I live in Lisbon and work best in the morning."),
            "#{section}: the member's copy lacks the fact:\n{facts}"
        );
        let status = std::process::Command::new(assert_cmd::cargo::cargo_bin("dream"))
            .args(["--repo"])
            .arg(env.home.join(dreamer))
            .args(["status", "--json"])
            .env("HOME", &env.home)
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        let seen: Vec<&str> = status["shared"]["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["machine"].as_str())
            .collect();
        assert_eq!(seen, machines, "#{section}: {said}");
    }
}

#[test]
fn readmes_walk_through_runs_from_a_fresh_clone() {
    let (env, script, out) = run_readme_section("try-it-on-the-sample-events");
    assert!(
        out.status.success(),
        "README's walk-through failed (exit {:?}):\n{}\n{}",
        out.status.code(),
        stdout(&out),
        stderr(&out)
    );
    let said = stdout(&out);

    // What README says it leaves: a repository under ~/memory with five facts and two cards,
    // the two malformed lines quarantined, and the fact it explains in what an agent loads.
    let repo = env.home.join("memory");
    let facts: Vec<String> = std::fs::read_dir(repo.join("memory"))
        .unwrap()
        .flat_map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .lines()
                .filter(|l| l.starts_with("- "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(facts.len(), 5, "README says five facts: {facts:#?}");
    assert!(
        facts
            .iter()
            .any(|f| f.contains("I live in Lisbon and work best in the morning.")),
        "{facts:#?}"
    );
    let cards = std::fs::read_dir(repo.join("review"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "md")
        })
        .count();
    assert_eq!(cards, 2, "README says two cards");
    assert!(said.contains("2 quarantined"), "{said}");
    let explained = Regex::new(r"dream explain (f_[0-9a-f]{8})")
        .unwrap()
        .captures(&script)
        .expect("the walk-through explains a fact")[1]
        .to_string();
    assert!(
        said.contains(&format!("[{explained}]")),
        "`dream context` does not show {explained}, the fact README explains:\n{said}"
    );
    assert!(
        said.contains("dream: evening cycle 2026-11-06"),
        "git log shows no cycle:\n{said}"
    );
}

#[test]
fn the_test_command_readme_gives_is_the_one_ci_runs() {
    let (doc, i) = readme_block("run-the-tests", "sh");
    let lines: Vec<(usize, String)> = shell_lines(&doc.blocks[i])
        .into_iter()
        .filter(|(_, l)| !l.is_empty())
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "README's test command is one line: {lines:?}"
    );
    let command = &lines[0].1;
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run does not run README's test command `{command}`"
    );
}
