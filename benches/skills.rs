//! How long finding recurring procedures takes (SPEC S10): the pure core of the skills
//! stage (tool calls into instances, instances into procedures) over synthetic windows of
//! growing size. Prints the median of several runs per size.
//!
//!     cargo bench --bench skills
//!
//! Each session asks for a few things; 40% of requests are served by one of twelve recurring
//! procedures (with a step left out or a one-off step added now and then, and one-off paths
//! and messages), the rest by runs of random tool calls. Deterministic.

use std::time::{Duration, Instant};

use dream_core::skills::procedure::{self, Thresholds};
use dream_core::sources::event::{parse_line, Event};

const PROCEDURES: &[&[(&str, &str)]] = &[
    &[
        ("Bash", "cargo fmt --all"),
        ("Edit", "src/{f}.rs old_string=a"),
        ("Bash", "cargo clippy --all-targets -- -D warnings"),
        ("Bash", "cargo test --workspace"),
        ("Bash", "git commit -am \"{m}\""),
    ],
    &[
        ("Bash", "npm ci"),
        ("Bash", "npm run lint"),
        ("Bash", "npm test -- --coverage"),
        ("Bash", "npm run build"),
    ],
    &[
        ("Bash", "git fetch origin"),
        ("Bash", "git rebase origin/main"),
        ("Bash", "cargo test"),
        ("Bash", "git push --force-with-lease"),
    ],
    &[
        ("Bash", "docker compose build"),
        ("Bash", "docker compose up -d"),
        ("Bash", "curl -fsS http://localhost:8080/health"),
    ],
    &[
        ("Edit", "CHANGELOG.md old_string=x"),
        ("Edit", "Cargo.toml old_string=x"),
        ("Bash", "cargo publish --dry-run"),
        ("Bash", "git tag v{n}"),
    ],
    &[
        ("Bash", "python3 -m venv .venv"),
        ("Bash", "pip install -r requirements.txt"),
        ("Bash", "pytest -q"),
    ],
    &[
        ("Bash", "terraform fmt"),
        ("Bash", "terraform validate"),
        ("Bash", "terraform plan -out plan.tfplan"),
    ],
    &[
        ("Bash", "kubectl get pods -n {f}"),
        ("Bash", "kubectl logs deploy/{f} --tail 100"),
        ("Bash", "kubectl rollout restart deploy/{f}"),
    ],
    &[
        ("Write", "docs/{f}.md content=x"),
        ("Bash", "mdbook build"),
        ("Bash", "git add docs"),
        ("Bash", "git commit -m \"{m}\""),
    ],
    &[
        ("Bash", "go vet ./..."),
        ("Bash", "go test ./... -race"),
        ("Bash", "go build -o bin/app ./cmd/app"),
    ],
    &[
        ("Bash", "make lint"),
        ("Bash", "make test"),
        ("Bash", "make dist"),
    ],
    &[
        ("Edit", "migrations/{n}.sql old_string=a"),
        ("Bash", "sqlx migrate run"),
        ("Bash", "cargo sqlx prepare"),
    ],
];
const ONE_OFF: &[(&str, &str)] = &[
    ("Bash", "ls -la {f}"),
    ("Read", "src/{f}.rs"),
    ("Grep", "{m} path=src"),
    ("Bash", "./scripts/{f}.sh --{f}"),
    ("Edit", "src/{f}.py old_string=a"),
    ("WebFetch", "https://example.com/{f}"),
    ("Bash", "curl -s https://api.example.com/{n}"),
    ("Bash", "{f} --version"),
    ("Task", "investigate {m}"),
    ("Bash", "{f}ctl status {f}"),
    ("Bash", "cargo run --bin {f}"),
    ("Bash", "python3 scripts/{f}.py --{f} {n}"),
];
const WORDS: &[&str] = &[
    "parser", "lexer", "billing", "auth", "cache", "queue", "ui", "api", "worker", "store",
    "search", "mail",
];

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

fn fill(rng: &mut Rng, t: &str) -> String {
    let f = WORDS[rng.below(WORDS.len())];
    let m = format!(
        "{} {}",
        WORDS[rng.below(WORDS.len())],
        WORDS[rng.below(WORDS.len())]
    );
    t.replace("{f}", f)
        .replace("{m}", &m)
        .replace("{n}", &rng.below(1000).to_string())
}

/// About `calls` tool calls over 14 days, with one owner request per few calls.
fn stream(calls: usize) -> Vec<Event> {
    let mut rng = Rng(0x2026_1102);
    let mut lines = Vec::new();
    let mut made = 0;
    let mut n = 0;
    while made < calls {
        let day = 1 + n % 14;
        let session = format!("d{day}-s{}", n / 14 / 6);
        let minute = (n / 14) % 6 * 60;
        let ts = |k: usize| {
            format!(
                "2026-11-{day:02}T{:02}:{:02}:{:02}Z",
                8 + (minute + k) / 60 % 12,
                (minute + k) % 60,
                n % 60
            )
        };
        lines.push(serde_json::json!({"ts": ts(0), "kind": "message", "actor": "user", "session": session, "text": format!("request {n}")}).to_string());
        let mut steps: Vec<(&str, &str)> = if rng.chance(0.4) {
            PROCEDURES[rng.below(PROCEDURES.len())].to_vec()
        } else {
            (0..1 + rng.below(6))
                .map(|_| ONE_OFF[rng.below(ONE_OFF.len())])
                .collect()
        };
        if rng.chance(0.3) {
            let at = rng.below(steps.len());
            steps.remove(at);
        }
        if rng.chance(0.3) {
            let at = rng.below(steps.len() + 1);
            steps.insert(at, ONE_OFF[rng.below(ONE_OFF.len())]);
        }
        for (k, (tool, template)) in steps.iter().enumerate() {
            let input = fill(&mut rng, template);
            lines.push(
                serde_json::json!({"ts": ts(k + 1), "kind": "tool_call", "session": session, "text": format!("{tool}: {input}"), "meta": {"tool": tool}})
                    .to_string(),
            );
            made += 1;
        }
        n += 1;
    }
    let mut events: Vec<Event> = lines
        .iter()
        .map(|l| parse_line(l.as_bytes(), 1 << 20).expect("valid").event)
        .collect();
    events.sort_by_key(|e| e.ts);
    events
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let t = Thresholds::from(&dream_core::schema::settings::Config::default().skills);
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "tool calls", "instances", "procedures", "recurring", "instances", "group"
    );
    for calls in [1_000, 5_000, 20_000] {
        let events = stream(calls);
        let refs: Vec<&Event> = events.iter().collect();
        let mut t_inst = Vec::new();
        let mut t_group = Vec::new();
        let mut shape = (0, 0, 0);
        for _ in 0..5 {
            let start = Instant::now();
            let inst = procedure::instances(&refs);
            t_inst.push(start.elapsed());
            let start = Instant::now();
            let groups = procedure::group(&inst, &t);
            t_group.push(start.elapsed());
            let eligible = inst.iter().filter(|i| procedure::eligible(i, &t)).count();
            shape = (
                eligible,
                groups.len(),
                groups.iter().filter(|p| p.recurs(&t).is_ok()).count(),
            );
        }
        println!(
            "{:>10} {:>10} {:>10} {:>10} {:>10.1}ms {:>10.1}ms",
            calls,
            shape.0,
            shape.1,
            shape.2,
            median(t_inst).as_secs_f64() * 1000.0,
            median(t_group).as_secs_f64() * 1000.0
        );
    }
}
