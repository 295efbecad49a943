//! The body lines of a pass commit: one mutation per line, readable by a person and parsed
//! back by `dream verify`.
//!
//! ```text
//! accepted drop    item=f_1a2b3c4d duplicate_of=f_5e6f7a8b similarity=1.000 kept_coverage=1.000 reason="same city, restated" text="User lives in Lisbon."
//! engine   promote item=f_0c1d2e3f from=scratch to=human reason="engine: category preferences belongs in human" text="I prefer tea."
//! refused  forget  item=f_99 claimed=stale refusal="itemId f_99 does not exist" reason="old"
//! ```
//!
//! The first word is the verdict: `accepted` (proposed by the model and applied), `engine`
//! (an engine backstop, applied), `refused` (not applied; `refusal` says why). A refused
//! line with `by=engine` is an engine backstop the loss guard held back; every other
//! refused line was the model's proposal. The second word is the operation. Values that
//! hold anything but letters, digits and `_.:/@+-,=` are JSON strings. A pass commit also
//! carries a trailer `Dream-Counts: proposed=N accepted=N refused=N engine=N`, followed by
//! `engine_refused=N` when the loss guard held back an engine backstop.

/// One mutation line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// `accepted`, `engine` or `refused`.
    pub verdict: String,
    /// `drop`, `merge`, `promote` or `forget`.
    pub op: String,
    pub fields: Vec<(String, String)>,
}

pub const VERDICTS: [&str; 3] = ["accepted", "engine", "refused"];
pub const OPS: [&str; 4] = ["drop", "merge", "promote", "forget"];

fn bare(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_alphanumeric() || "_.:/@+-,=".contains(c))
}

impl Line {
    pub fn new(verdict: &str, op: &str) -> Line {
        Line {
            verdict: verdict.into(),
            op: op.into(),
            fields: Vec::new(),
        }
    }

    /// Add a field (empty values are left out).
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Line {
        let value = value.into();
        if !value.is_empty() {
            self.fields.push((key.into(), value));
        }
        self
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn render(&self) -> String {
        let mut out = format!("{:<8} {:<7}", self.verdict, self.op);
        for (k, v) in &self.fields {
            out.push(' ');
            out.push_str(k);
            out.push('=');
            if bare(v) {
                out.push_str(v);
            } else {
                out.push_str(&serde_json::to_string(v).expect("strings serialize"));
            }
        }
        out
    }

    /// Parse a line; `None` when it is not a mutation line.
    pub fn parse(line: &str) -> Option<Line> {
        let mut words = line.split_whitespace();
        let verdict = words.next()?;
        let op = words.next()?;
        if !VERDICTS.contains(&verdict) || !OPS.contains(&op) {
            return None;
        }
        let rest = line.trim_start()[verdict.len()..].trim_start()[op.len()..].trim_start();
        let fields = crate::text::kv::parse(rest, false)?
            .into_iter()
            .map(|(k, v)| (k, v.one()))
            .collect();
        Some(Line {
            verdict: verdict.into(),
            op: op.into(),
            fields,
        })
    }
}

/// The counts a pass commit declares in its `Dream-Counts:` trailer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub proposed: usize,
    pub accepted: usize,
    pub refused: usize,
    pub engine: usize,
    /// Engine backstops the loss guard held back (not the model's: `proposed` does not
    /// count them).
    pub engine_refused: usize,
}

impl Counts {
    /// The value of the `Dream-Counts:` trailer.
    pub fn trailer_value(&self) -> String {
        let mut v = format!(
            "proposed={} accepted={} refused={} engine={}",
            self.proposed, self.accepted, self.refused, self.engine
        );
        if self.engine_refused > 0 {
            v.push_str(&format!(" engine_refused={}", self.engine_refused));
        }
        v
    }

    pub fn parse_trailer(value: &str) -> Option<Counts> {
        let mut c = Counts::default();
        for part in value.split_whitespace() {
            let (k, v) = part.split_once('=')?;
            let n: usize = v.parse().ok()?;
            match k {
                "proposed" => c.proposed = n,
                "accepted" => c.accepted = n,
                "refused" => c.refused = n,
                "engine" => c.engine = n,
                "engine_refused" => c.engine_refused = n,
                _ => return None,
            }
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let line = Line::new("accepted", "merge")
            .with("item", "f_1")
            .with("from", "f_2,f_3")
            .with("coverage", "1.000")
            .with("reason", "fragments of \"one\" fact")
            .with("text", "My stack is Airflow and Postgres.")
            .with("empty", "");
        let text = line.render();
        assert!(
            text.starts_with("accepted merge   item=f_1 from=f_2,f_3 coverage=1.000 reason="),
            "{text}"
        );
        assert_eq!(Line::parse(&text), Some(line));
        assert_eq!(
            Line::parse("promoted   f_1  [human/identity] I live in Lisbon."),
            None
        );
        let c = Counts {
            proposed: 3,
            accepted: 1,
            refused: 2,
            engine: 4,
            engine_refused: 0,
        };
        assert_eq!(
            c.trailer_value(),
            "proposed=3 accepted=1 refused=2 engine=4"
        );
        assert_eq!(Counts::parse_trailer(&c.trailer_value()), Some(c));
        let held = Counts {
            engine_refused: 2,
            ..c
        };
        assert_eq!(Counts::parse_trailer(&held.trailer_value()), Some(held));
    }
}
