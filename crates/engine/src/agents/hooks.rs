//! `dream hooks install|uninstall|status claude-code|codex`: put dream's context into a
//! harness for the current user, and take it out again.
//!
//! The edits themselves are pure (`dream_core::recall::hooks`); this file finds the files, keeps a
//! backup, writes atomically, and records the harness's transcripts as an
//! `[[inbox.sources]]` entry of `dream.toml` (a commit, under the repository's lock).
//!
//! Claude Code's default is the SessionStart hook, not the `@` import: the hook runs
//! `dream context` at every start, resume, `/clear` and after every compaction (no
//! matcher), so the context is as fresh as the last review decision, comes back after a
//! compaction (the reason CLAUDE.md is usually preferred), is recorded in the transcript
//! as the hook's output (which the adapter stores as recalled), and needs no approval of
//! an external import. `--method import` is there for people who want the context in
//! CLAUDE.md itself.
//!
//! Codex gets a managed block in `AGENTS.md`, not a hook: AGENTS.md is read by every Codex
//! version and surface, needs no trust review (Codex asks a person to trust each
//! non-managed hook before it runs), and is re-sent with every turn; each cycle refreshes
//! the block. Codex versions with hooks can take a SessionStart hook instead
//! (`--method hook`): `~/.codex/hooks.json` has the same `hooks.SessionStart` shape as
//! Claude Code's settings, so the same edits write it, and `dream context --hook codex`
//! prints the JSON (`hookSpecificOutput.additionalContext`) Codex validates. The block stays
//! the default: it needs no trust review and works in every version.
//!
//! Gemini CLI, opencode and GitHub Copilot CLI get the same managed block in the file each
//! reads as the user's own instructions at every session: `~/.gemini/GEMINI.md`
//! (`$GEMINI_CLI_HOME/.gemini`), `~/.config/opencode/AGENTS.md` (`$XDG_CONFIG_HOME`) and
//! `~/.copilot/copilot-instructions.md` (`$COPILOT_HOME`). A context file works in every
//! version of each, needs no hook trust, and the cycle refreshes it like Codex's.

use std::path::{Path, PathBuf};

use serde::Serialize;

use dream_core::recall::hooks as edit;

use crate::edges::fsutil::write_atomic;
use crate::edges::store::{Change, Store};
use crate::error::{Context as _, Error, Result};

/// A harness dream can put its context into. The command line lists these names (and
/// their help) for `dream hooks`; a new harness is one variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Gemini,
    Opencode,
    Copilot,
}

impl Harness {
    pub const ALL: [Harness; 5] = [
        Harness::ClaudeCode,
        Harness::Codex,
        Harness::Gemini,
        Harness::Opencode,
        Harness::Copilot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::Gemini => "gemini",
            Harness::Opencode => "opencode",
            Harness::Copilot => "copilot",
        }
    }

    /// What `dream hooks --help` says beside the name, where the name is not enough.
    pub fn about(self) -> Option<&'static str> {
        match self {
            Harness::ClaudeCode | Harness::Codex => None,
            Harness::Gemini => Some("Gemini CLI: a block in ~/.gemini/GEMINI.md"),
            Harness::Opencode => Some("opencode: a block in ~/.config/opencode/AGENTS.md"),
            Harness::Copilot => {
                Some("GitHub Copilot CLI: a block in ~/.copilot/copilot-instructions.md")
            }
        }
    }
}

impl std::str::FromStr for Harness {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Harness::ALL
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or_else(|| format!("unknown harness {s:?}"))
    }
}

/// How `dream hooks install` puts the context into a harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookMethod {
    Hook,
    Import,
    Block,
}

impl HookMethod {
    pub const ALL: [HookMethod; 3] = [HookMethod::Hook, HookMethod::Import, HookMethod::Block];

    pub fn as_str(self) -> &'static str {
        match self {
            HookMethod::Hook => "hook",
            HookMethod::Import => "import",
            HookMethod::Block => "block",
        }
    }

    /// What `dream hooks install --help` says beside the name.
    pub fn about(self) -> &'static str {
        match self {
            HookMethod::Hook => "Claude Code (its default), or Codex: a SessionStart hook",
            HookMethod::Import => "Claude Code: an `@` import of CONTEXT.md in CLAUDE.md",
            HookMethod::Block => {
                "Codex, Gemini CLI, opencode, Copilot CLI (their default): a managed block in the agent's instructions file"
            }
        }
    }
}

impl std::str::FromStr for HookMethod {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        HookMethod::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown method {s:?}"))
    }
}

/// The command's clock (`--now`), for the lock's note and the commit's session id.
type Now = chrono::DateTime<chrono::Utc>;

/// Where a harness keeps its files for the current user.
#[derive(Debug, Clone)]
pub struct Home {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude: PathBuf,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex: PathBuf,
    /// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
    pub gemini: PathBuf,
    /// opencode's config folder: `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`.
    pub opencode_config: PathBuf,
    /// opencode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
    pub opencode_data: PathBuf,
    /// `$COPILOT_HOME`, else `~/.copilot`.
    pub copilot: PathBuf,
}

impl Home {
    pub fn from_env() -> Result<Home> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::Usage(
                    "HOME is not set: dream hooks works on the current user's files".into(),
                )
            })?;
        let dir = |var: &str, default: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(default))
        };
        let under = |var: &str, default: &str, name: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(default))
                .join(name)
        };
        Ok(Home {
            claude: dir("CLAUDE_CONFIG_DIR", ".claude"),
            codex: dir("CODEX_HOME", ".codex"),
            gemini: under("GEMINI_CLI_HOME", "", ".gemini"),
            opencode_config: under("XDG_CONFIG_HOME", ".config", "opencode"),
            opencode_data: under("XDG_DATA_HOME", ".local/share", "opencode"),
            copilot: dir("COPILOT_HOME", ".copilot"),
        })
    }

    fn settings(&self) -> PathBuf {
        self.claude.join("settings.json")
    }

    fn claude_md(&self) -> PathBuf {
        self.claude.join("CLAUDE.md")
    }

    fn agents_md(&self) -> PathBuf {
        self.codex.join("AGENTS.md")
    }

    /// Codex's user-level hooks file.
    fn codex_hooks(&self) -> PathBuf {
        self.codex.join("hooks.json")
    }

    /// The instructions file a harness reads at every session, where dream keeps a
    /// managed block (every harness but Claude Code).
    pub fn block_file(&self, h: Harness) -> Option<PathBuf> {
        match h {
            Harness::ClaudeCode => None,
            Harness::Codex => Some(self.agents_md()),
            Harness::Gemini => Some(self.gemini.join("GEMINI.md")),
            Harness::Opencode => Some(self.opencode_config.join("AGENTS.md")),
            Harness::Copilot => Some(self.copilot.join("copilot-instructions.md")),
        }
    }

    /// The transcripts folder of a harness, as dream.toml should name it.
    fn transcripts(&self, h: Harness) -> PathBuf {
        match h {
            Harness::ClaudeCode => self.claude.join("projects"),
            Harness::Codex => self.codex.join("sessions"),
            Harness::Gemini => self.gemini.join("tmp"),
            Harness::Opencode => self.opencode_data.join("opencode.db"),
            Harness::Copilot => self.copilot.join("session-state"),
        }
    }
}

/// One file install or uninstall changes, before and after.
#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    pub path: PathBuf,
    #[serde(skip)]
    pub before: Option<String>,
    #[serde(skip)]
    pub after: Option<String>,
    /// What happened, in a sentence.
    pub what: String,
}

impl FileChange {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }

    /// The lines that differ, `-` before and `+` after (the common head and tail left
    /// out), for `--dry-run`.
    pub fn diff(&self) -> String {
        let a: Vec<&str> = self.before.as_deref().unwrap_or("").lines().collect();
        let b: Vec<&str> = self.after.as_deref().unwrap_or("").lines().collect();
        let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let tail = a[head..]
            .iter()
            .rev()
            .zip(b[head..].iter().rev())
            .take_while(|(x, y)| x == y)
            .count();
        let mut out = String::new();
        for l in &a[head..a.len() - tail] {
            out.push_str(&format!("- {l}\n"));
        }
        for l in &b[head..b.len() - tail] {
            out.push_str(&format!("+ {l}\n"));
        }
        out
    }
}

fn read_opt(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).context(|| format!("reading {}", path.display())),
    }
}

/// The backup beside a file: the bytes it held before dream's last install changed it.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".dream-backup");
    path.with_file_name(name)
}

fn shell_quote(p: &Path) -> String {
    shell_words::quote(&p.to_string_lossy()).into_owned()
}

/// The method install uses for a harness: the one asked for when the harness has it, else
/// the harness's default (Claude Code's hook, everyone else's block).
pub fn method(h: Harness, asked: Option<HookMethod>) -> Result<HookMethod> {
    let default = match h {
        Harness::ClaudeCode => HookMethod::Hook,
        _ => HookMethod::Block,
    };
    let m = asked.unwrap_or(default);
    let fits = match h {
        Harness::ClaudeCode => m != HookMethod::Block,
        Harness::Codex => m != HookMethod::Import,
        _ => m == HookMethod::Block,
    };
    if fits {
        Ok(m)
    } else {
        let takes = match h {
            Harness::ClaudeCode => "hook (the default) or import",
            Harness::Codex => "block (the default) or hook",
            _ => "block only",
        };
        Err(Error::Usage(format!(
            "--method {} does not apply to {}: it takes {takes}",
            match m {
                HookMethod::Hook => "hook",
                HookMethod::Import => "import",
                HookMethod::Block => "block",
            },
            h.as_str()
        )))
    }
}

/// Codex's SessionStart hook command: this binary, the repository, `context --hook codex`
/// (which prints the JSON Codex reads a SessionStart hook's context from).
pub fn codex_hook_command(exe: &Path, root: &Path) -> String {
    format!(
        "{} --repo {} {}",
        shell_quote(exe),
        shell_quote(root),
        edit::CODEX_HOOK_MARK
    )
}

/// The hook's command: this binary, the repository, `context --hook claude-code`.
pub fn hook_command(exe: &Path, root: &Path) -> String {
    format!(
        "{} --repo {} {}",
        shell_quote(exe),
        shell_quote(root),
        edit::CLAUDE_HOOK_MARK
    )
}

/// The marker line's note of a managed block: the repository it comes from, and how to
/// take it out.
fn block_note(h: Harness, root: &Path) -> String {
    format!(
        "repo={} (managed by `dream hooks`: each cycle refreshes it; `dream hooks uninstall {}` removes it)",
        root.display(),
        h.as_str()
    )
}

fn claude_note(root: &Path) -> String {
    format!(
        "repo={} (managed by `dream hooks`; `dream hooks uninstall claude-code` removes it)",
        root.display()
    )
}

/// What install or uninstall did (or, with `--dry-run`, would do).
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub harness: &'static str,
    pub files: Vec<FileChange>,
    /// Lines for the person (what was kept, what to do next).
    pub notes: Vec<String>,
}

/// The edit install makes to the harness's own file.
fn planned_install(
    h: Harness,
    method: HookMethod,
    home: &Home,
    root: &Path,
    exe: &Path,
    context_text: &str,
    context_file: &str,
) -> Result<FileChange> {
    let (path, what, after) = match (h, method) {
        (Harness::ClaudeCode, HookMethod::Hook) => {
            let path = home.settings();
            let before = read_opt(&path)?;
            let after = edit::claude_install(before.as_deref(), &hook_command(exe, root))
                .map_err(|m| Error::Input(format!("{}: {m}", path.display())))?;
            (
                path,
                "a SessionStart hook that prints `dream context`",
                after,
            )
        }
        (Harness::ClaudeCode, HookMethod::Import) => {
            if context_file.is_empty() {
                return Err(Error::Usage(
                    "--method import needs context.file in dream.toml (it is empty); set it, for example to \"CONTEXT.md\"".into(),
                ));
            }
            let path = home.claude_md();
            let before = read_opt(&path)?;
            let body = format!("@{}", root.join(context_file).display());
            let after =
                edit::block_install(before.as_deref(), &edit::block(&claude_note(root), &body));
            (path, "an @ import of the context file", after)
        }
        (Harness::Codex, HookMethod::Hook) => {
            let path = home.codex_hooks();
            let before = read_opt(&path)?;
            let after = edit::claude_install(before.as_deref(), &codex_hook_command(exe, root))
                .map_err(|m| Error::Input(format!("{}: {m}", path.display())))?;
            (
                path,
                "a SessionStart hook that prints `dream context`",
                after,
            )
        }
        (h, _) => {
            let path = home.block_file(h).unwrap_or_else(|| home.agents_md());
            let before = read_opt(&path)?;
            let after = edit::block_install(
                before.as_deref(),
                &edit::block(&block_note(h, root), context_text),
            );
            (path, "a block holding the context", after)
        }
    };
    let before = read_opt(&path)?;
    Ok(FileChange {
        what: if before.as_deref() == Some(after.as_str()) {
            format!("already has {what}")
        } else {
            format!("adds {what}")
        },
        path,
        before,
        after: Some(after),
    })
}

/// The folder a file is in (the stop for removing folders a removal left empty: none).
fn home_dir_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Apply a file change: back up what was there, then write atomically (or remove).
fn apply_file(fc: &FileChange, keep_backup: bool) -> Result<()> {
    if !fc.changed() {
        return Ok(());
    }
    let backup = backup_path(&fc.path);
    if keep_backup {
        if let Some(before) = &fc.before {
            write_keeping_mode(&backup, before.as_bytes(), Some(&fc.path))?;
        } else if backup.exists() {
            // A stale backup from an earlier install would claim the file existed before.
            crate::edges::fsutil::remove_file(&backup, &home_dir_of(&backup))?;
        }
    }
    match &fc.after {
        Some(text) => write_keeping_mode(&fc.path, text.as_bytes(), None),
        None => crate::edges::fsutil::remove_file(&fc.path, &home_dir_of(&fc.path)),
    }
}

/// The harness's transcripts as an `[[inbox.sources]]` entry, unless dream.toml already
/// reads them.
fn planned_source(h: Harness, home: &Home, root: &Path, install: bool) -> Result<FileChange> {
    let path = root.join(dream_core::schema::settings::FILE);
    let before = read_opt(&path)?.unwrap_or_default();
    let format = h.as_str();
    let folder = home.transcripts(h);
    let (after, what) = if install {
        let config = crate::config::load(root)?;
        let reads = config
            .inbox
            .sources
            .iter()
            .any(|s| s.format.as_str() == format && expand(&s.path, root) == folder);
        if reads {
            (
                before.clone(),
                format!("already reads {}", folder.display()),
            )
        } else {
            (
                edit::source_install(&before, h.as_str(), format, &tilde(&folder)),
                format!("adds an [[inbox.sources]] entry for {}", folder.display()),
            )
        }
    } else {
        match edit::source_remove(&before, h.as_str()) {
            Some(after) => (
                after,
                "removes the [[inbox.sources]] entry install added".into(),
            ),
            None => (
                before.clone(),
                "has no [[inbox.sources]] entry install added".into(),
            ),
        }
    };
    Ok(FileChange {
        path,
        before: Some(before),
        after: Some(after),
        what,
    })
}

/// A path under HOME as `~/...` (dream.toml stays right for the same user on another
/// machine), any other path as it is.
fn tilde(p: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        if let Ok(rest) = p.strip_prefix(&home) {
            return format!("~/{}", rest.display());
        }
    }
    p.display().to_string()
}

/// A source path as dream reads it: `~` is HOME, a relative path is relative to the repo.
fn expand(p: &str, root: &Path) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    let path = PathBuf::from(p);
    if path.is_absolute() {
        path
    } else {
        root.join(path)
    }
}

/// Take the repository's lock for writing, finish or forget whatever change a crash
/// interrupted (`guard`: so a killed install's journal, git lock or half-written
/// dream.toml is dealt with before anything is read), and remove the temporary files
/// killed runs left in the harness's folders. Held until the command ends.
fn begin(root: &Path, home: &Home, now: Now) -> Result<crate::edges::guard::Writer> {
    let inbox = crate::config::load(root).ok().map(|c| c.inbox.path);
    let writer = crate::edges::guard::begin(root, now, inbox.as_deref())?;
    for dir in [&home.claude, &home.codex] {
        let n = crate::edges::fsutil::sweep_temp(dir);
        if n > 0 {
            tracing::warn!(folder = %dir.display(), removed = n, "removed temporary files an interrupted dream left");
        }
    }
    Ok(writer)
}

/// Commit dream.toml (and the context file, for an import); the caller holds the lock
/// ([`begin`]).
fn commit_repo(root: &Path, writes: Vec<(String, String)>, subject: &str, now: Now) -> Result<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let store = Store::open(root)?;
    let mut change = Change::default();
    for (p, t) in writes {
        change.write(p, t);
    }
    let session = format!("hooks-{}", now.format("%Y%m%dT%H%M%SZ"));
    let lines = vec![format!(
        "edited     {}  ({subject})",
        dream_core::schema::settings::FILE
    )];
    change.message = dream_core::operations::commit::Message::new(
        subject,
        lines,
        &session,
        dream_core::schema::Stage::Manual,
    )
    .render();
    store.apply(&change)?;
    Ok(())
}

/// Install dream's context into a harness.
#[allow(clippy::too_many_arguments)]
pub fn install(
    h: Harness,
    method: HookMethod,
    root: &Path,
    home: &Home,
    exe: &Path,
    context_text: &str,
    dry_run: bool,
    now: Now,
) -> Result<Outcome> {
    let _writer = if dry_run {
        None
    } else {
        Some(begin(root, home, now)?)
    };
    let config = crate::config::load(root)?;
    let context_file = config.context.file.trim().to_string();
    let harness_file = planned_install(h, method, home, root, exe, context_text, &context_file)?;
    let source = planned_source(h, home, root, true)?;
    let mut notes = Vec::new();
    let mut repo_writes = Vec::new();
    if source.changed() {
        repo_writes.push((
            dream_core::schema::settings::FILE.to_string(),
            source.after.clone().unwrap_or_default(),
        ));
    }
    let mut files = vec![harness_file.clone(), source.clone()];
    if h == Harness::ClaudeCode
        && method == HookMethod::Import
        && !root.join(&context_file).exists()
    {
        repo_writes.push((context_file.clone(), context_text.to_string()));
        files.push(FileChange {
            path: root.join(&context_file),
            before: None,
            after: Some(context_text.to_string()),
            what: "writes the context file now (each cycle rewrites it)".into(),
        });
    }
    if dry_run {
        notes.push("dry run: nothing was written".into());
        return Ok(Outcome {
            harness: h.as_str(),
            files,
            notes,
        });
    }
    commit_repo(
        root,
        repo_writes,
        &format!(
            "dream: read {} transcripts (dream hooks install {})",
            h.as_str(),
            h.as_str()
        ),
        now,
    )?;
    // dream.toml is committed: a failure from here on says so, and the same install run
    // again finds the entry there and writes only the harness's file.
    let committed = if source.changed() {
        format!(
            "{} now reads the {} transcripts (committed)",
            dream_core::schema::settings::FILE,
            h.as_str()
        )
    } else {
        format!(
            "{} already read the {} transcripts",
            dream_core::schema::settings::FILE,
            h.as_str()
        )
    };
    apply_file(&harness_file, true).map_err(Error::partial(committed))?;
    if harness_file.changed() {
        // A backup is written only of a file that existed.
        notes.push(match harness_file.before {
            Some(_) => format!(
                "the file as it was is kept at {}",
                backup_path(&harness_file.path).display()
            ),
            None => format!(
                "{} did not exist before: `dream hooks uninstall {}` removes it again",
                harness_file.path.display(),
                h.as_str()
            ),
        });
    }
    match (h, method) {
        (Harness::ClaudeCode, HookMethod::Hook) => notes.push(
            "every Claude Code session now starts with `dream context` (also after /clear and compaction)".into(),
        ),
        (Harness::ClaudeCode, _) => notes.push(
            "Claude Code may ask once to allow the external import; each cycle rewrites the file".into(),
        ),
        (Harness::Codex, HookMethod::Hook) => notes.push(
            "Codex asks you once to trust the new hook (/hooks); from then on every session starts with `dream context`. Codex versions without hooks: use the default block instead".into(),
        ),
        (Harness::Codex, _) => notes.push(
            "Codex reads the block from AGENTS.md at every session; each cycle refreshes it".into(),
        ),
        (Harness::Gemini, _) => notes.push(
            "Gemini CLI reads the block from GEMINI.md at every session (`/memory show` shows it); each cycle refreshes it".into(),
        ),
        (Harness::Opencode, _) => notes.push(
            "opencode reads the block from its global AGENTS.md at every session; each cycle refreshes it".into(),
        ),
        (Harness::Copilot, _) => notes.push(
            "Copilot CLI reads the block from copilot-instructions.md at every session; each cycle refreshes it".into(),
        ),
    }
    Ok(Outcome {
        harness: h.as_str(),
        files,
        notes,
    })
}

/// Take out what install added (both Claude Code methods, or the Codex block).
pub fn uninstall(h: Harness, root: &Path, home: &Home, dry_run: bool, now: Now) -> Result<Outcome> {
    let _writer = if dry_run {
        None
    } else {
        Some(begin(root, home, now)?)
    };
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let targets: Vec<PathBuf> = match h {
        Harness::ClaudeCode => vec![home.settings(), home.claude_md()],
        Harness::Codex => vec![home.agents_md(), home.codex_hooks()],
        h => home.block_file(h).into_iter().collect(),
    };
    for path in targets {
        if let Some(fc) = removal(path, dry_run, &mut notes)? {
            files.push(fc);
        }
    }
    let source = planned_source(h, home, root, false)?;
    if files.is_empty() {
        notes.push(format!(
            "nothing of dream's is installed for {}",
            h.as_str()
        ));
    }
    files.push(source.clone());
    if dry_run {
        notes.push("dry run: nothing was written".into());
        return Ok(Outcome {
            harness: h.as_str(),
            files,
            notes,
        });
    }
    let done = remove_installed(&files[..files.len() - 1])?;
    if source.changed() {
        commit_repo(
            root,
            vec![(
                dream_core::schema::settings::FILE.to_string(),
                source.after.clone().unwrap_or_default(),
            )],
            &format!(
                "dream: stop reading {} transcripts (dream hooks uninstall {})",
                h.as_str(),
                h.as_str()
            ),
            now,
        )
        .map_err(|e| match &done {
            Some(d) => Error::partial(d.clone())(e),
            None => e,
        })?;
    }
    Ok(Outcome {
        harness: h.as_str(),
        files,
        notes,
    })
}

/// What uninstalling does to one file install edited: `None` when nothing of dream's is in
/// it (an interrupted uninstall's backup, left identical to the file, is removed then).
fn removal(path: PathBuf, dry_run: bool, notes: &mut Vec<String>) -> Result<Option<FileChange>> {
    let Some(before) = read_opt(&path)? else {
        return Ok(None);
    };
    let removed = if path.extension().is_some_and(|e| e == "json") {
        edit::claude_uninstall(&before)
            .map_err(|m| Error::Input(format!("{}: {m}", path.display())))?
    } else {
        edit::block_remove(&before)
    };
    let backup = backup_path(&path);
    let Some(removed) = removed else {
        // Nothing of dream's left, and the backup holds exactly the file: an uninstall
        // restored it and was stopped before removing the backup, which is finished now.
        if !dry_run && read_opt(&backup)?.as_deref() == Some(before.as_str()) {
            crate::edges::fsutil::remove_file(&backup, &home_dir_of(&backup))?;
        }
        return Ok(None);
    };
    let saved = read_opt(&backup)?;
    let created = saved.is_none()
        && (removed.trim().is_empty()
            || serde_json::from_str::<serde_json::Value>(&removed)
                .is_ok_and(|v| v == serde_json::json!({})));
    let (after, what) = match (&saved, created) {
        (_, true) => (None, "removes the file dream created".to_string()),
        (Some(s), _) if *s == removed => (
            Some(removed),
            "restored byte for byte as it was before install".into(),
        ),
        _ => {
            notes.push(format!(
                "{} changed since install: only dream's part was taken out; the copy from before install stays at {}",
                path.display(),
                backup.display()
            ));
            (
                Some(removed),
                "takes out dream's part, keeps the rest".into(),
            )
        }
    };
    Ok(Some(FileChange {
        path,
        before: Some(before),
        after,
        what,
    }))
}

/// Write each file's removal (and drop its backup once the file is restored); returns what
/// is done, for the error of a later step.
fn remove_installed(files: &[FileChange]) -> Result<Option<String>> {
    let mut done: Vec<String> = Vec::new();
    for fc in files {
        let so_far = |done: &[String]| {
            let d = done.to_vec();
            move |e: Error| {
                if d.is_empty() {
                    e
                } else {
                    Error::partial(format!("{} had dream's part taken out", d.join(" and ")))(e)
                }
            }
        };
        apply_file(fc, false).map_err(so_far(&done))?;
        done.push(fc.path.display().to_string());
        let backup = backup_path(&fc.path);
        let restored = fc.what.starts_with("restored") || fc.after.is_none();
        if restored && backup.exists() {
            crate::edges::fsutil::remove_file(&backup, &home_dir_of(&backup))
                .map_err(so_far(&done))?;
        }
    }
    Ok(if done.is_empty() {
        None
    } else {
        Some(format!("{} had dream's part taken out", done.join(" and ")))
    })
}

/// What is installed for one harness.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub harness: &'static str,
    pub installed: bool,
    /// `hook`, `import` or `agents-md`, with the file.
    pub methods: Vec<String>,
    /// Repositories the installed context comes from.
    pub repos: Vec<String>,
    /// Whether this repository's dream.toml reads the harness's transcripts.
    pub source: bool,
    pub backups: Vec<PathBuf>,
}

pub fn status(h: Harness, root: Option<&Path>, home: &Home) -> Result<Status> {
    let mut methods = Vec::new();
    let mut repos = Vec::new();
    let mut backups = Vec::new();
    let repo_of = |note_line: &str| {
        note_line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("repo="))
            .map(str::to_string)
    };
    let block_repo = |text: &str| {
        text.lines()
            .find(|l| l.starts_with(edit::BLOCK_BEGIN))
            .and_then(repo_of)
    };
    match h {
        Harness::ClaudeCode => {
            if let Some(t) = read_opt(&home.settings())? {
                for c in edit::claude_hooks(&t) {
                    methods.push(format!("hook in {}", home.settings().display()));
                    if let Some(r) = shell_words::split(&c).ok().and_then(|w| {
                        w.iter()
                            .position(|x| x == "--repo")
                            .and_then(|i| w.get(i + 1).cloned())
                    }) {
                        repos.push(r);
                    }
                }
            }
            if let Some(t) = read_opt(&home.claude_md())? {
                if edit::block_body(&t).is_some() {
                    methods.push(format!("import in {}", home.claude_md().display()));
                    repos.extend(block_repo(&t));
                }
            }
            for p in [home.settings(), home.claude_md()] {
                if backup_path(&p).exists() {
                    backups.push(backup_path(&p));
                }
            }
        }
        h => {
            if h == Harness::Codex {
                if let Some(t) = read_opt(&home.codex_hooks())? {
                    for c in edit::claude_hooks(&t) {
                        methods.push(format!("hook in {}", home.codex_hooks().display()));
                        if let Some(r) = shell_words::split(&c).ok().and_then(|w| {
                            w.iter()
                                .position(|x| x == "--repo")
                                .and_then(|i| w.get(i + 1).cloned())
                        }) {
                            repos.push(r);
                        }
                    }
                }
                if backup_path(&home.codex_hooks()).exists() {
                    backups.push(backup_path(&home.codex_hooks()));
                }
            }
            let file = home.block_file(h).unwrap_or_else(|| home.agents_md());
            if let Some(t) = read_opt(&file)? {
                if edit::block_body(&t).is_some() {
                    methods.push(format!("block in {}", file.display()));
                    repos.extend(block_repo(&t));
                }
            }
            if backup_path(&file).exists() {
                backups.push(backup_path(&file));
            }
        }
    }
    let source = match root {
        Some(r) => crate::config::load(r).is_ok_and(|c| {
            c.inbox.sources.iter().any(|s| {
                s.format.as_str() == h.as_str() && expand(&s.path, r) == home.transcripts(h)
            })
        }),
        None => false,
    };
    Ok(Status {
        harness: h.as_str(),
        installed: !methods.is_empty(),
        methods,
        repos,
        source,
        backups,
    })
}

/// The cycle's refresh of the managed blocks (Codex, Gemini CLI, opencode, Copilot CLI) that
/// hold this repository's context (see `stages::context`).
pub fn refresh_codex_block(root: &Path, context_text: &str) -> Result<()> {
    let home = match Home::from_env() {
        Ok(h) => h,
        Err(_) => return Ok(()),
    };
    for h in Harness::ALL {
        refresh_block(&home, h, root, context_text)?;
    }
    Ok(())
}

fn refresh_block(home: &Home, h: Harness, root: &Path, context_text: &str) -> Result<()> {
    let Some(path) = home.block_file(h) else {
        return Ok(());
    };
    let Some(text) = read_opt(&path)? else {
        return Ok(());
    };
    // Install names the repository by its canonical path.
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let root = canonical.as_path();
    let note = block_note(h, root);
    let ours = text.lines().any(|l| {
        l.starts_with(edit::BLOCK_BEGIN) && l.contains(&format!("repo={} ", root.display()))
    });
    if !ours || edit::block_body(&text) == Some(context_text) {
        return Ok(());
    }
    let new = edit::block_install(Some(&text), &edit::block(&note, context_text));
    write_keeping_mode(&path, new.as_bytes(), None)
}

/// The file `path` names once its symbolic links are followed (at most 40, as the kernel
/// does); the path itself when it is no link, and the last link's target when the chain
/// is longer or a link cannot be read. A relative target is read from its link's folder.
fn through_links(path: &Path) -> std::path::PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            break;
        }
        match std::fs::read_link(&at) {
            Ok(target) => {
                at = at.parent().unwrap_or(Path::new(".")).join(target);
            }
            Err(_) => break,
        }
    }
    at
}

/// Write `path` atomically with the permissions the file had (or, for a new file, those of
/// `like`, else `rw-r--r--`, as an agent writes its own settings): an atomic write goes
/// through a private temporary file, and an agent's settings.json, CLAUDE.md or AGENTS.md
/// must keep the mode its owner gave it.
///
/// A symbolic link (a settings.json kept with the person's dotfiles) stays a link: the
/// file it points to is written, never the link replaced by a copy.
fn write_keeping_mode(path: &Path, bytes: &[u8], like: Option<&Path>) -> Result<()> {
    let resolved = through_links(path);
    let path = resolved.as_path();
    let mode = std::fs::metadata(path)
        .or_else(|e| like.map_or(Err(e), std::fs::metadata))
        .ok()
        .map(|m| m.permissions());
    write_atomic(path, bytes)?;
    #[cfg(unix)]
    let mode = mode.or_else(|| {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::Permissions::from_mode(0o644))
    });
    match mode {
        Some(p) => std::fs::set_permissions(path, p)
            .context(|| format!("setting the permissions of {}", path.display())),
        None => Ok(()),
    }
}
