//! `dream ingest [FILE|-]...`: validate events and append them to the inbox.

use std::io::{BufRead, BufReader, Read};

use crate::cli::{Global, IngestArgs};
use crate::config::Config;
use crate::error::{Context, Error, Result, EXIT_FAILURE, EXIT_OK};
use crate::event::{self, Event};
use crate::inbox;

pub fn run(g: &Global, a: &IngestArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = Config::load(&root)?;
    let now = super::now(g)?;
    let mut events: Vec<Event> = Vec::new();
    let mut refused = 0usize;
    let mut redacted = 0usize;
    let inputs: Vec<String> = if a.files.is_empty() {
        vec!["-".into()]
    } else {
        a.files.iter().map(|p| p.display().to_string()).collect()
    };
    for input in &inputs {
        let reader: Box<dyn Read> = if input == "-" {
            Box::new(std::io::stdin())
        } else {
            Box::new(std::fs::File::open(input).context(|| format!("opening {input}"))?)
        };
        let mut reader = BufReader::new(reader);
        let mut line_no = 0u64;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .context(|| format!("reading {input}"))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                buf.pop();
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match event::parse_line(&buf, config.inbox.max_event_bytes) {
                Ok(p) => {
                    if !p.redacted.is_empty() {
                        redacted += 1;
                    }
                    events.push(p.event);
                }
                Err(reason) => {
                    refused += 1;
                    eprintln!("{input}:{line_no}: {reason}");
                }
            }
        }
    }
    let file = root
        .join(&config.inbox.path)
        .join(format!("ingest-{}.jsonl", now.format("%Y-%m-%d")));
    inbox::append(&file, &events)?;
    eprintln!(
        "appended {} events to {}{}{}",
        events.len(),
        file.display(),
        if redacted > 0 {
            format!(" ({redacted} with secrets redacted)")
        } else {
            String::new()
        },
        if refused > 0 {
            format!("; refused {refused} lines (listed above)")
        } else {
            String::new()
        }
    );
    if refused > 0 && events.is_empty() {
        return Err(Error::Input(format!(
            "no valid event in {refused} lines; see the reasons above"
        )));
    }
    Ok(if refused > 0 { EXIT_FAILURE } else { EXIT_OK })
}
