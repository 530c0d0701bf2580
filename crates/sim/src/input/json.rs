//! A small JSON reader for rt-app files.
//!
//! rt-app's files are not plain JSON objects: an event list is an object
//! whose keys repeat (`"run"` twice in one phase) and whose order is the
//! program, and json-c, which rt-app uses, accepts `/* */` and `//`
//! comments. A map-based parser loses both, so objects here are ordered
//! lists of entries, each with the line it starts on, for errors that name
//! the line.

use std::fmt;

/// A JSON value with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub line: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    /// Entries in file order, duplicates kept.
    Object(Vec<(String, Value)>),
}

impl Value {
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match &self.kind {
            Kind::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self.kind {
            Kind::Number(n) => Some(n),
            _ => None,
        }
    }

    /// An integer, if the number is one.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_f64()
            .filter(|n| n.fract() == 0.0 && n.abs() < 9.0e15)
            .map(|n| n as i64)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.kind {
            Kind::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match &self.kind {
            Kind::Array(a) => Some(a),
            _ => None,
        }
    }

    /// What kind of value this is, for messages.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Number(_) => "a number",
            Kind::String(_) => "a string",
            Kind::Array(_) => "an array",
            Kind::Object(_) => "an object",
        }
    }
}

/// A syntax error, with its line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for SyntaxError {}

/// Parses one JSON document (with comments).
pub fn parse(text: &str) -> Result<Value, SyntaxError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        line: 1,
        line_start: 0,
    };
    let v = p.value(0)?;
    p.skip_ws()?;
    if p.i < p.s.len() {
        return Err(p.err("unexpected text after the document"));
    }
    Ok(v)
}

/// Nesting deeper than this is refused (rt-app files nest four levels).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
}

impl Parser<'_> {
    fn err(&self, message: &str) -> SyntaxError {
        SyntaxError {
            line: self.line,
            column: self.i - self.line_start + 1,
            message: message.to_string(),
        }
    }

    fn bump(&mut self) -> Option<u8> {
        let c = *self.s.get(self.i)?;
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
            self.line_start = self.i;
        }
        Some(c)
    }

    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.s.get(self.i) {
                Some(b' ' | b'\t' | b'\r' | b'\n') => {
                    self.bump();
                }
                Some(b'/') if self.s.get(self.i + 1) == Some(&b'/') => {
                    while let Some(c) = self.bump() {
                        if c == b'\n' {
                            break;
                        }
                    }
                }
                Some(b'/') if self.s.get(self.i + 1) == Some(&b'*') => {
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            None => return Err(self.err("unterminated /* comment")),
                            Some(b'*') if self.s.get(self.i) == Some(&b'/') => {
                                self.bump();
                                break;
                            }
                            _ => {}
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.skip_ws()?;
        let line = self.line;
        let kind = match self.s.get(self.i) {
            None => return Err(self.err("unexpected end of file")),
            Some(b'{') => {
                self.bump();
                let mut entries = Vec::new();
                self.skip_ws()?;
                if self.s.get(self.i) == Some(&b'}') {
                    self.bump();
                } else {
                    loop {
                        self.skip_ws()?;
                        if self.s.get(self.i) != Some(&b'"') {
                            return Err(self.err("expected a key in double quotes"));
                        }
                        let key = self.string()?;
                        self.skip_ws()?;
                        if self.s.get(self.i) != Some(&b':') {
                            return Err(self.err(&format!("key {key:?} has no ':' and value")));
                        }
                        self.bump();
                        let v = self.value(depth + 1)?;
                        entries.push((key, v));
                        self.skip_ws()?;
                        match self.bump() {
                            Some(b',') => {
                                // json-c tolerates a trailing comma.
                                self.skip_ws()?;
                                if self.s.get(self.i) == Some(&b'}') {
                                    self.bump();
                                    break;
                                }
                            }
                            Some(b'}') => break,
                            _ => return Err(self.err("expected ',' or '}' in an object")),
                        }
                    }
                }
                Kind::Object(entries)
            }
            Some(b'[') => {
                self.bump();
                let mut items = Vec::new();
                self.skip_ws()?;
                if self.s.get(self.i) == Some(&b']') {
                    self.bump();
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.skip_ws()?;
                        match self.bump() {
                            Some(b',') => {}
                            Some(b']') => break,
                            _ => return Err(self.err("expected ',' or ']' in an array")),
                        }
                    }
                }
                Kind::Array(items)
            }
            Some(b'"') => Kind::String(self.string()?),
            Some(b't') => self.word("true", Kind::Bool(true))?,
            Some(b'f') => self.word("false", Kind::Bool(false))?,
            Some(b'n') => self.word("null", Kind::Null)?,
            Some(c) if *c == b'-' || c.is_ascii_digit() => self.number()?,
            Some(_) => return Err(self.err("expected a value")),
        };
        Ok(Value { line, kind })
    }

    fn word(&mut self, w: &str, kind: Kind) -> Result<Kind, SyntaxError> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            for _ in 0..w.len() {
                self.bump();
            }
            Ok(kind)
        } else {
            Err(self.err("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.i;
        while let Some(c) = self.s.get(self.i) {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.bump();
            } else {
                break;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
        text.parse::<f64>()
            .map(Kind::Number)
            .map_err(|_| self.err(&format!("{text:?} is not a number")))
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.bump(); // opening quote
        let mut out = Vec::new();
        loop {
            match self.bump() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => match self.bump() {
                    Some(b'"') => out.push(b'"'),
                    Some(b'\\') => out.push(b'\\'),
                    Some(b'/') => out.push(b'/'),
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    Some(b'r') => out.push(b'\r'),
                    Some(b'b') => out.push(8),
                    Some(b'f') => out.push(12),
                    Some(b'u') => {
                        let hex = self
                            .s
                            .get(self.i..self.i + 4)
                            .ok_or_else(|| self.err("bad \\u escape"))?;
                        let code = u32::from_str_radix(std::str::from_utf8(hex).unwrap_or(""), 16)
                            .map_err(|_| self.err("bad \\u escape"))?;
                        for _ in 0..4 {
                            self.bump();
                        }
                        let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    _ => return Err(self.err("bad escape in a string")),
                },
                Some(c) => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_duplicate_keys_in_order_with_lines() {
        let v = parse("{\n  \"run\": 1,\n  \"sleep\": 2,\n  \"run\": 3\n}").unwrap();
        let o = v.as_object().unwrap();
        let keys: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["run", "sleep", "run"]);
        assert_eq!(o[2].1.as_i64(), Some(3));
        assert_eq!(o[2].1.line, 4);
    }

    #[test]
    fn comments_and_trailing_commas() {
        let v = parse("/* head */ { // line\n \"a\": [1, 2.5, -3e2], \"b\": true, }").unwrap();
        let o = v.as_object().unwrap();
        assert_eq!(o[0].1.as_array().unwrap()[2].as_f64(), Some(-300.0));
        assert_eq!(o[1].1.as_bool(), Some(true));
    }

    #[test]
    fn errors_say_where() {
        let e = parse("{\n \"a\": 1\n \"b\": 2 }").unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (3, "expected ',' or '}' in an object")
        );
        assert!(parse("{\"a\": tru}").is_err());
        assert!(parse("\"\\q\"").is_err());
        assert!(parse("{} x").is_err());
        assert!(parse(&"[".repeat(100)).is_err());
        assert_eq!(parse("\"\\u00e9\"").unwrap().as_str(), Some("é"));
    }
}
