//! Counts what redaction finds in files, to watch for false positives and to time it:
//! `cargo run --release -p dream-core --example secret_scan -- FILE...`. Each line of each
//! file is scanned as one text (an inbox or transcript line); every finding is printed with
//! its rule and a few characters around it (the middle of the match masked), so a person
//! can read each one; then the counts per rule and the time per MiB, split into the
//! vendored gitleaks rules and the whole of `secrets::find`.

// A maintainer's tool beside the core: it reads the files named and prints what redaction
// finds; the core library itself does neither.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros
)]
use std::collections::BTreeMap;
use std::time::Instant;

use dream_core::{sources::secret_rules, sources::secrets};

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    let mut texts = Vec::new();
    for f in &files {
        let Ok(t) = std::fs::read_to_string(f) else {
            eprintln!("skipped (not UTF-8 text): {f}");
            continue;
        };
        texts.extend(t.lines().map(|l| (f.clone(), l.to_string())));
    }
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let mut per_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for (f, t) in &texts {
        for hit in secrets::find(t) {
            *per_rule.entry(hit.detector).or_default() += 1;
            let mut a = hit.start.saturating_sub(30);
            while !t.is_char_boundary(a) {
                a -= 1;
            }
            let mut b = (hit.end + 10).min(t.len());
            while !t.is_char_boundary(b) {
                b += 1;
            }
            let secret = &t[hit.start..hit.end];
            let shown: String = if secret.chars().count() > 8 {
                let c: Vec<char> = secret.chars().collect();
                format!(
                    "{}…{}",
                    c[..4].iter().collect::<String>(),
                    c[c.len() - 2..].iter().collect::<String>()
                )
            } else {
                secret.to_string()
            };
            println!(
                "{}\t{}\t{}«{}»{}",
                hit.detector,
                f.rsplit('/').next().unwrap_or(f),
                t[a..hit.start].replace('\n', " "),
                shown,
                t[hit.end..b].replace('\n', " ")
            );
        }
    }
    let total: usize = per_rule.values().sum();
    println!(
        "# {} lines, {:.2} MiB, {total} findings",
        texts.len(),
        bytes as f64 / 1048576.0
    );
    for (r, n) in &per_rule {
        println!("#   {r}: {n}");
    }
    let _ = &*secret_rules::RULES;
    let rounds = (64 * 1048576 / bytes.max(1)).clamp(1, 200);
    let t0 = Instant::now();
    for _ in 0..rounds {
        for (_, t) in &texts {
            std::hint::black_box(secret_rules::RULES.find(t));
        }
    }
    let rules = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    for _ in 0..rounds {
        for (_, t) in &texts {
            std::hint::black_box(secrets::find(t));
        }
    }
    let all = t0.elapsed().as_secs_f64();
    let mib = (bytes * rounds) as f64 / 1048576.0;
    println!(
        "# time: secrets::find {:.1} MiB/s ({:.3} s for {mib:.0} MiB); of it the gitleaks rules {:.1} MiB/s ({:.3} s), the hand-written detectors about {:.3} s",
        mib / all,
        all,
        mib / rules,
        rules,
        all - rules
    );
}
