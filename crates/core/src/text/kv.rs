//! `key=value` words, the one format of the metadata comment after a fact
//! (`<!-- id=f_1 cat=identity src=["e1","e2"] -->`) and of the passes' commit lines
//! (`accepted drop item=f_1 why="..."`): a value is a bare word, a JSON string (so it may
//! hold spaces and quotes), or, where lists are allowed, a JSON list of strings. Anything
//! else is not this format (`None`), never a guess.

/// One value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    One(String),
    List(Vec<String>),
}

impl Value {
    /// The value as one string (a list joined with commas).
    pub fn one(&self) -> String {
        match self {
            Value::One(s) => s.clone(),
            Value::List(v) => v.join(","),
        }
    }

    /// The value as a list (a bare value split at commas; empty is no item).
    pub fn list(&self) -> Vec<String> {
        match self {
            Value::One(s) if s.is_empty() => Vec::new(),
            Value::One(s) => s.split(',').map(str::to_string).collect(),
            Value::List(v) => v.clone(),
        }
    }
}

/// The pairs of `s` in order; `None` when it is not `key=value` words. A value that
/// starts with `[` is a JSON list when `lists` is true (and not this format otherwise,
/// unless quoted).
pub fn parse(s: &str, lists: bool) -> Option<Vec<(String, Value)>> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_string();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        let after = &rest[eq + 1..];
        let (value, used) = if after.starts_with('"') {
            let mut it = serde_json::Deserializer::from_str(after).into_iter::<String>();
            let v = it.next()?.ok()?;
            (Value::One(v), it.byte_offset())
        } else if lists && after.starts_with('[') {
            let mut it = serde_json::Deserializer::from_str(after).into_iter::<Vec<String>>();
            let v = it.next()?.ok()?;
            (Value::List(v), it.byte_offset())
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (Value::One(after[..end].to_string()), end)
        };
        out.push((key, value));
        rest = after[used..].trim_start();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_quoted_and_list_values_parse_and_anything_else_is_refused() {
        let got = parse(r#"id=f_1 why="two words" src=["a","b"]"#, true).unwrap();
        assert_eq!(
            got,
            vec![
                ("id".into(), Value::One("f_1".into())),
                ("why".into(), Value::One("two words".into())),
                ("src".into(), Value::List(vec!["a".into(), "b".into()])),
            ]
        );
        assert_eq!(parse("", true), Some(vec![]));
        assert_eq!(parse("no equals here", true), None);
        assert_eq!(parse(r#"why="unterminated"#, true), None);
        assert_eq!(
            parse(r#"src=["a","b"]"#, false).unwrap()[0].1.one(),
            r#"["a","b"]"#
        );
    }
}
