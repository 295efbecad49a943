//! A JSON parser with a memory cap, for transcript lines too long to load whole (a tool
//! that printed 50 MB, a pasted screenshot). It streams the line through `struson` and
//! builds the same `serde_json::Value` a normal parse would, except that every string is
//! cut to [`STRING_CAP`] bytes (with a note of its full length, which the adapters carry
//! into their own truncation note), arrays keep their first [`ARRAY_CAP`] items, and once
//! [`TOTAL_CAP`] bytes of strings are kept, later strings keep only their note. Memory is
//! bounded by those caps, whatever the line's length.

use std::io::Read;

use serde_json::{Map, Number, Value};
use struson::reader::{JsonReader, JsonStreamReader, ValueType};

use super::drop_partial_word;

/// Bytes kept of one string.
pub const STRING_CAP: usize = 64 * 1024;
/// Items kept of one array.
pub const ARRAY_CAP: usize = 10_000;
/// Bytes of strings kept in all.
pub const TOTAL_CAP: usize = 4 * 1024 * 1024;

const NOTE_HEAD: &str = "\n[truncated: ";
const NOTE_TAIL: &str = " bytes in all]";

/// Parse one JSON value from `reader` within the caps.
pub fn parse(reader: impl Read) -> Result<Value, String> {
    let mut json = JsonStreamReader::new(reader);
    let mut budget = TOTAL_CAP;
    let value = read_value(&mut json, &mut budget).map_err(|e| format!("not valid JSON: {e}"))?;
    json.consume_trailing_whitespace()
        .map_err(|e| format!("not valid JSON: {e}"))?;
    Ok(value)
}

/// Parse the first JSON value from `reader` within the caps, ignoring what follows it (the
/// first line of a file, without knowing its length).
pub fn parse_first(reader: impl Read) -> Result<Value, String> {
    let mut json = JsonStreamReader::new(reader);
    let mut budget = TOTAL_CAP;
    read_value(&mut json, &mut budget).map_err(|e| format!("not valid JSON: {e}"))
}

/// Read a whole-file JSON document (an object) one item at a time: each item of the array
/// under `key` goes to `each` as soon as it is parsed, within the caps for that item
/// alone, so a session document of any length is read with the memory of one message.
/// The other members are gathered (capped) and handed to `each` with no index when the
/// array starts (the document's metadata), and returned with the ones after it; each item
/// comes with its index. With `items` false the array is skipped unparsed (a first pass
/// that learns the metadata wherever in the document it is).
pub fn for_each_item(
    reader: impl Read,
    key: &str,
    items: bool,
    mut each: impl FnMut(Option<usize>, Value),
) -> Result<Map<String, Value>, String> {
    let bad = |e: Box<dyn std::error::Error>| format!("not valid JSON: {e}");
    let mut json = JsonStreamReader::new(reader);
    let mut rest = Map::new();
    let walk = || -> Res<()> {
        if json.peek()? != ValueType::Object {
            return Err("the document is not a JSON object".into());
        }
        json.begin_object()?;
        while json.has_next()? {
            let name = json.next_name_owned()?;
            if name == key && !items {
                json.skip_value()?;
            } else if name == key && json.peek()? == ValueType::Array {
                each(None, Value::Object(rest.clone()));
                json.begin_array()?;
                let mut i = 0;
                while json.has_next()? {
                    let mut budget = TOTAL_CAP;
                    each(Some(i), read_value(&mut json, &mut budget)?);
                    i += 1;
                }
                json.end_array()?;
            } else {
                let mut budget = TOTAL_CAP;
                let v = read_value(&mut json, &mut budget)?;
                rest.insert(name, v);
            }
        }
        json.end_object()?;
        json.consume_trailing_whitespace()?;
        Ok(())
    };
    walk().map_err(bad)?;
    Ok(rest)
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn read_value<R: Read>(json: &mut JsonStreamReader<R>, budget: &mut usize) -> Res<Value> {
    Ok(match json.peek()? {
        ValueType::Null => {
            json.next_null()?;
            Value::Null
        }
        ValueType::Boolean => Value::Bool(json.next_bool()?),
        ValueType::Number => {
            let s = json.next_number_as_string()?;
            match serde_json::from_str::<Number>(&s) {
                Ok(n) => Value::Number(n),
                Err(_) => Value::String(s),
            }
        }
        ValueType::String => Value::String(read_string(json, budget)?),
        ValueType::Array => {
            json.begin_array()?;
            let mut items = Vec::new();
            while json.has_next()? {
                if items.len() < ARRAY_CAP {
                    items.push(read_value(json, budget)?);
                } else {
                    json.skip_value()?;
                }
            }
            json.end_array()?;
            Value::Array(items)
        }
        ValueType::Object => {
            json.begin_object()?;
            let mut map = Map::new();
            while json.has_next()? {
                let name = json.next_name_owned()?;
                let v = read_value(json, budget)?;
                map.insert(name, v);
            }
            json.end_object()?;
            Value::Object(map)
        }
    })
}

fn read_string<R: Read>(json: &mut JsonStreamReader<R>, budget: &mut usize) -> Res<String> {
    let keep = STRING_CAP.min(*budget);
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = [0u8; 8192];
    let mut r = json.next_string_reader()?;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n;
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    drop(r);
    let mut s = match String::from_utf8(kept) {
        Ok(s) => s,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    if total > s.len() {
        // The string goes on past the cut: drop the cut word's fragment.
        let keep = drop_partial_word(&s).len();
        s.truncate(keep);
        s.push_str(NOTE_HEAD);
        s.push_str(&total.to_string());
        s.push_str(NOTE_TAIL);
    }
    *budget = budget.saturating_sub(s.len());
    Ok(s)
}

/// A text without the note [`parse`] left on a cut string, and the full length it gave.
pub fn split_note(text: &str) -> (&str, Option<u64>) {
    if let Some(rest) = text.strip_suffix(NOTE_TAIL) {
        if let Some(at) = rest.rfind(NOTE_HEAD) {
            if let Ok(n) = rest[at + NOTE_HEAD.len()..].parse::<u64>() {
                return (&text[..at], Some(n));
            }
        }
    }
    (text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_parse_as_serde_json_does() {
        let line = r#"{"a":[1,2.5,-3e2,true,null,"x\n\u00e9"],"b":{"c":"d"}}"#;
        let want: Value = serde_json::from_str(line).unwrap();
        assert_eq!(parse(line.as_bytes()).unwrap(), want);
    }

    #[test]
    fn long_strings_are_cut_with_their_full_length() {
        let big = "é".repeat(STRING_CAP); // two bytes each
        let line = format!(r#"{{"type":"tool_result","content":"{big}","is_error":false}}"#);
        let v = parse(line.as_bytes()).unwrap();
        let content = v["content"].as_str().unwrap();
        let (head, full) = split_note(content);
        assert_eq!(full, Some(big.len() as u64));
        assert!(head.len() <= STRING_CAP && head.chars().all(|c| c == 'é'));
        assert_eq!(
            v["is_error"],
            Value::Bool(false),
            "fields after the long string survive"
        );
    }

    #[test]
    fn no_fragment_of_a_word_cut_at_the_cap_survives() {
        let text = format!(
            "{}sk-proj-abcdefghijklmnopqrstuvwxyz0123 tail",
            "a ".repeat((STRING_CAP - 10) / 2)
        );
        let v = parse(format!("{{\"t\":\"{text}\"}}").as_bytes()).unwrap();
        let (head, full) = split_note(v["t"].as_str().unwrap());
        assert_eq!(full, Some(text.len() as u64));
        assert!(!head.contains("sk-"), "{}", &head[head.len() - 20..]);
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        assert!(parse(&b"{\"a\": [1, 2"[..])
            .unwrap_err()
            .starts_with("not valid JSON"));
        assert!(parse(&b"{\"a\": 1} trailing"[..]).is_err());
    }
}
