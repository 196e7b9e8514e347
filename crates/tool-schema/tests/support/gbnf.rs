//! A small GBNF reader, matcher and sampler for the tests (and the fuzz target), for the
//! subset `tool_schema::grammar` writes.
//!
//! No maintained Rust crate parses and matches llama.cpp's GBNF (the `gbnf` crate builds
//! grammars, `kbnf` reads its own dialect), so this one follows llama.cpp's reader and
//! matcher closely:
//!
//! - a grammar is lines `name ::= body`, names of `[a-zA-Z0-9-]`; `#` starts a comment;
//! - a body is alternatives (`|`) of sequences of literals `"…"`, classes `[…]`/`[^…]`
//!   with ranges, rule names and groups `( … )`, each followed by at most one of `*`, `+`,
//!   `?`, `{m}`, `{m,}`, `{m,n}`;
//! - escapes are those llama.cpp reads, `\"`, `\\`, `\[`, `\]`, `\n`, `\r`, `\t`, `\uXXXX`,
//!   `\UXXXXXXXX`, except `\xHH`, which xgrammar reads differently and so is refused;
//! - every rule used is defined, none twice, and `root` exists;
//! - repetitions are rewritten into rules as llama.cpp does, and matching keeps a set of
//!   stacks of positions, advanced one character at a time, a rule reference in the last
//!   place of its sequence replacing its frame (so right recursion does not grow a stack).
//!
//! It also samples strings from a grammar (random derivations that end by taking the
//! shortest way out once past a length budget), to check that what a grammar allows is
//! what the decoders read.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};

/// One character test.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CharSet {
    negated: bool,
    ranges: Vec<(u32, u32)>,
}

impl CharSet {
    fn one(c: char) -> CharSet {
        CharSet {
            negated: false,
            ranges: vec![(c as u32, c as u32)],
        }
    }

    pub fn matches(&self, c: char) -> bool {
        let c = c as u32;
        self.ranges
            .iter()
            .any(|(low, high)| *low <= c && c <= *high)
            != self.negated
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Symbol {
    Char(CharSet),
    Rule(usize),
}

/// A parsed grammar: rules of alternatives of symbol sequences (repetitions rewritten).
#[derive(Debug, Clone)]
pub struct Grammar {
    names: Vec<String>,
    rules: Vec<Vec<Vec<Symbol>>>,
    root: usize,
    /// The fewest characters each rule can produce (for sampling).
    shortest: Vec<usize>,
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    names: HashMap<String, usize>,
    order: Vec<String>,
    rules: Vec<Option<Vec<Vec<Symbol>>>>,
    used: Vec<(usize, usize)>,
}

type Result<T> = std::result::Result<T, String>;

impl<'a> Parser<'a> {
    fn error<T>(&self, message: &str) -> Result<T> {
        let line = self.text[..self.pos.min(self.text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Err(format!("line {line}: {message}"))
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    /// Blanks and comments; line breaks too when `newlines`.
    fn space(&mut self, newlines: bool) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' => self.pos += 1,
                b'\n' | b'\r' if newlines => self.pos += 1,
                b'#' => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            self.pos += 1;
        }
        if start == self.pos {
            return self.error("expected a name");
        }
        Ok(String::from_utf8_lossy(&self.text[start..self.pos]).into_owned())
    }

    fn id(&mut self, name: &str) -> usize {
        if let Some(id) = self.names.get(name) {
            return *id;
        }
        let id = self.rules.len();
        self.names.insert(name.to_owned(), id);
        self.order.push(name.to_owned());
        self.rules.push(None);
        id
    }

    fn new_rule(&mut self, alternatives: Vec<Vec<Symbol>>) -> usize {
        let name = format!("#{}", self.rules.len());
        let id = self.id(&name);
        self.rules[id] = Some(alternatives);
        id
    }

    fn hex(&mut self, digits: usize) -> Result<char> {
        let end = self.pos + digits;
        if end > self.text.len() {
            return self.error("short escape");
        }
        let text = std::str::from_utf8(&self.text[self.pos..end]).map_err(|e| e.to_string())?;
        let code = u32::from_str_radix(text, 16).map_err(|_| format!("bad hex {text:?}"))?;
        self.pos = end;
        char::from_u32(code).ok_or_else(|| format!("not a character: {code:#x}"))
    }

    /// One character of a literal or class, escapes read.
    fn char(&mut self) -> Result<char> {
        match self.peek() {
            None => self.error("unexpected end"),
            Some(b'\\') => {
                self.pos += 1;
                let escape = self.peek();
                self.pos += 1;
                match escape {
                    Some(b'u') => self.hex(4),
                    Some(b'U') => self.hex(8),
                    Some(b'n') => Ok('\n'),
                    Some(b'r') => Ok('\r'),
                    Some(b't') => Ok('\t'),
                    Some(c @ (b'\\' | b'"' | b'[' | b']')) => Ok(c as char),
                    Some(b'x') => self.error("\\x escapes read differently in xgrammar"),
                    _ => self.error("unknown escape"),
                }
            }
            Some(_) => {
                let rest = std::str::from_utf8(&self.text[self.pos..])
                    .map_err(|e| format!("invalid UTF-8: {e}"))?;
                let c = rest.chars().next().ok_or("unexpected end")?;
                if c == '\n' || c == '\r' {
                    return self.error("raw line break in a literal or class");
                }
                self.pos += c.len_utf8();
                Ok(c)
            }
        }
    }

    fn alternatives(&mut self, nested: bool) -> Result<Vec<Vec<Symbol>>> {
        let mut alternatives = vec![self.sequence(nested)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            self.space(true);
            alternatives.push(self.sequence(nested)?);
        }
        Ok(alternatives)
    }

    fn sequence(&mut self, nested: bool) -> Result<Vec<Symbol>> {
        let mut sequence: Vec<Symbol> = Vec::new();
        loop {
            let start = sequence.len();
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    while self.peek() != Some(b'"') {
                        let c = self.char()?;
                        sequence.push(Symbol::Char(CharSet::one(c)));
                    }
                    self.pos += 1;
                }
                Some(b'[') => {
                    self.pos += 1;
                    let negated = self.peek() == Some(b'^');
                    if negated {
                        self.pos += 1;
                    }
                    let mut ranges = Vec::new();
                    while self.peek() != Some(b']') {
                        let low = self.char()?;
                        let high = if self.peek() == Some(b'-')
                            && self.text.get(self.pos + 1) != Some(&b']')
                        {
                            self.pos += 1;
                            self.char()?
                        } else {
                            low
                        };
                        if high < low {
                            return self.error("reversed range");
                        }
                        ranges.push((low as u32, high as u32));
                    }
                    self.pos += 1;
                    sequence.push(Symbol::Char(CharSet { negated, ranges }));
                }
                Some(b'(') => {
                    self.pos += 1;
                    self.space(true);
                    let inner = self.alternatives(true)?;
                    if self.peek() != Some(b')') {
                        return self.error("expected ')'");
                    }
                    self.pos += 1;
                    let id = self.new_rule(inner);
                    sequence.push(Symbol::Rule(id));
                }
                Some(b) if b.is_ascii_alphanumeric() || b == b'-' => {
                    let line = self.pos;
                    let name = self.name()?;
                    let id = self.id(&name);
                    self.used.push((id, line));
                    sequence.push(Symbol::Rule(id));
                }
                _ => break,
            }
            self.space(nested);
            // A repetition applies to the last element.
            let repeat = match self.peek() {
                Some(b'*') => Some((0, None)),
                Some(b'+') => Some((1, None)),
                Some(b'?') => Some((0, Some(1))),
                Some(b'{') => {
                    self.pos += 1;
                    let min = self.number()?;
                    let max = if self.peek() == Some(b',') {
                        self.pos += 1;
                        if self.peek() == Some(b'}') {
                            None
                        } else {
                            Some(self.number()?)
                        }
                    } else {
                        Some(min)
                    };
                    if self.peek() != Some(b'}') {
                        return self.error("expected '}'");
                    }
                    Some((min, max))
                }
                _ => None,
            };
            if let Some((min, max)) = repeat {
                self.pos += 1;
                if sequence.len() == start {
                    return self.error("repetition without an element");
                }
                let element = sequence.split_off(start);
                let repeated = self.repeat(element, min, max)?;
                sequence.extend(repeated);
                self.space(nested);
                if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
                    return self.error("two repetitions on one element");
                }
            }
            if !matches!(self.peek(), Some(b'"' | b'[' | b'('))
                && !self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                break;
            }
        }
        Ok(sequence)
    }

    fn number(&mut self) -> Result<usize> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.text[start..self.pos])
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or_else(|| self.error("expected a number"), Ok)
    }

    /// `element{min,max}` as llama.cpp rewrites it: `min` copies, then nested optional
    /// copies (or a right-recursive star).
    fn repeat(
        &mut self,
        element: Vec<Symbol>,
        min: usize,
        max: Option<usize>,
    ) -> Result<Vec<Symbol>> {
        if max.is_some_and(|max| max < min) || min > 2000 || max.is_some_and(|m| m > 2000) {
            return self.error("bad repetition bounds");
        }
        let mut out = Vec::new();
        for _ in 0..min {
            out.extend(element.iter().cloned());
        }
        match max {
            None => {
                let id = self.new_rule(Vec::new());
                let mut again = element.clone();
                again.push(Symbol::Rule(id));
                self.rules[id] = Some(vec![again, Vec::new()]);
                out.push(Symbol::Rule(id));
            }
            Some(max) => {
                let mut tail: Option<usize> = None;
                for _ in min..max {
                    let mut once = element.clone();
                    if let Some(tail) = tail {
                        once.push(Symbol::Rule(tail));
                    }
                    tail = Some(self.new_rule(vec![once, Vec::new()]));
                }
                if let Some(tail) = tail {
                    out.push(Symbol::Rule(tail));
                }
            }
        }
        Ok(out)
    }
}

/// One position: the next symbol of an alternative of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Frame {
    rule: usize,
    alternative: usize,
    index: usize,
}

type Stack = Vec<Frame>;

/// Most stacks one step may hold before the matcher gives up (a sign of an ambiguous
/// grammar that a server would also find slow).
pub const MAX_STACKS: usize = 20_000;

impl Grammar {
    pub fn parse(text: &str) -> Result<Grammar> {
        let mut parser = Parser {
            text: text.as_bytes(),
            pos: 0,
            names: HashMap::new(),
            order: Vec::new(),
            rules: Vec::new(),
            used: Vec::new(),
        };
        loop {
            parser.space(true);
            if parser.pos >= parser.text.len() {
                break;
            }
            let name = parser.name()?;
            parser.space(false);
            if !parser.text[parser.pos..].starts_with(b"::=") {
                return parser.error("expected '::='");
            }
            parser.pos += 3;
            parser.space(true);
            let id = parser.id(&name);
            if parser.rules[id].is_some() {
                return parser.error(&format!("rule {name} defined twice"));
            }
            let alternatives = parser.alternatives(false)?;
            parser.rules[id] = Some(alternatives);
            parser.space(false);
            match parser.peek() {
                None | Some(b'\n' | b'\r') => {}
                _ => return parser.error("unexpected text after a rule"),
            }
        }
        for (id, _) in &parser.used {
            if parser.rules[*id].is_none() {
                return Err(format!("rule {} used but not defined", parser.order[*id]));
            }
        }
        let root = *parser.names.get("root").ok_or("no root rule")?;
        let rules: Vec<Vec<Vec<Symbol>>> = parser
            .rules
            .into_iter()
            .map(|rule| rule.unwrap_or_default())
            .collect();
        let shortest = shortest(&rules);
        if shortest[root] == usize::MAX {
            return Err("root produces no finite string".into());
        }
        Ok(Grammar {
            names: parser.order,
            rules,
            root,
            shortest,
        })
    }

    /// Number of rules as written (rewritten repetitions and groups not counted).
    pub fn written_rules(&self) -> usize {
        self.names.iter().filter(|n| !n.starts_with('#')).count()
    }

    /// All stacks reachable from `stack` whose top is a character (or that are empty).
    fn advance(&self, stack: Stack, out: &mut HashSet<Stack>, depth: usize) {
        assert!(depth < 10_000, "left recursion or an epsilon loop");
        let Some(top) = stack.last().copied() else {
            out.insert(stack);
            return;
        };
        match &self.rules[top.rule][top.alternative][top.index] {
            Symbol::Char(_) => {
                out.insert(stack);
            }
            Symbol::Rule(rule) => {
                let mut base = stack;
                base.pop();
                if top.index + 1 < self.rules[top.rule][top.alternative].len() {
                    base.push(Frame {
                        index: top.index + 1,
                        ..top
                    });
                }
                for (alternative, symbols) in self.rules[*rule].iter().enumerate() {
                    let mut next = base.clone();
                    if !symbols.is_empty() {
                        next.push(Frame {
                            rule: *rule,
                            alternative,
                            index: 0,
                        });
                    }
                    self.advance(next, out, depth + 1);
                }
            }
        }
    }

    fn start(&self) -> HashSet<Stack> {
        let mut out = HashSet::new();
        for (alternative, symbols) in self.rules[self.root].iter().enumerate() {
            let stack = if symbols.is_empty() {
                Vec::new()
            } else {
                vec![Frame {
                    rule: self.root,
                    alternative,
                    index: 0,
                }]
            };
            self.advance(stack, &mut out, 0);
        }
        out
    }

    fn step(&self, stacks: &HashSet<Stack>, c: char) -> HashSet<Stack> {
        let mut out = HashSet::new();
        for stack in stacks {
            let Some(top) = stack.last() else { continue };
            let Symbol::Char(set) = &self.rules[top.rule][top.alternative][top.index] else {
                unreachable!("advanced stacks end in a character");
            };
            if !set.matches(c) {
                continue;
            }
            let mut next = stack.clone();
            next.pop();
            if top.index + 1 < self.rules[top.rule][top.alternative].len() {
                next.push(Frame {
                    index: top.index + 1,
                    ..*top
                });
            }
            self.advance(next, &mut out, 0);
        }
        assert!(out.len() < MAX_STACKS, "{} stacks after {c:?}", out.len());
        out
    }

    /// Whether the whole of `input` is a string of the grammar.
    pub fn matches(&self, input: &str) -> bool {
        self.longest_prefix(input) == Some(input.len())
    }

    /// How far `input` can be read: `None` when it cannot be read to its end; else the
    /// byte length read, when the grammar is complete there.
    pub fn longest_prefix(&self, input: &str) -> Option<usize> {
        let mut stacks = self.start();
        for c in input.chars() {
            stacks = self.step(&stacks, c);
            if stacks.is_empty() {
                return None;
            }
        }
        stacks.iter().any(Vec::is_empty).then_some(input.len())
    }

    /// Whether some string of the grammar starts with `input`.
    pub fn accepts_prefix(&self, input: &str) -> bool {
        let mut stacks = self.start();
        for c in input.chars() {
            stacks = self.step(&stacks, c);
            if stacks.is_empty() {
                return false;
            }
        }
        true
    }

    /// A random string of the grammar, about `budget` characters long or shorter.
    pub fn sample(&self, rng: &mut Rng, budget: usize) -> String {
        let mut out = String::new();
        self.sample_rule(self.root, rng, budget, &mut out, 0);
        out
    }

    fn sample_rule(
        &self,
        rule: usize,
        rng: &mut Rng,
        budget: usize,
        out: &mut String,
        depth: usize,
    ) {
        let alternatives = &self.rules[rule];
        let finite: Vec<usize> = (0..alternatives.len())
            .filter(|&a| self.sequence_shortest(&alternatives[a]) != usize::MAX)
            .collect();
        let pick = if out.chars().count() >= budget || depth > 400 {
            // Head for the end: the alternative that ends soonest.
            *finite
                .iter()
                .min_by_key(|&&a| self.sequence_shortest(&alternatives[a]))
                .expect("a rule that can end")
        } else {
            finite[rng.below(finite.len())]
        };
        for symbol in &alternatives[pick] {
            match symbol {
                Symbol::Char(set) => out.push(rng.char_in(set)),
                Symbol::Rule(rule) => self.sample_rule(*rule, rng, budget, out, depth + 1),
            }
        }
    }

    fn sequence_shortest(&self, symbols: &[Symbol]) -> usize {
        symbols.iter().fold(0usize, |total, symbol| {
            let one = match symbol {
                Symbol::Char(_) => 1,
                Symbol::Rule(rule) => self.shortest[*rule],
            };
            total.saturating_add(one)
        })
    }
}

/// The fewest characters each rule can produce (`usize::MAX` for none), by fixpoint.
fn shortest(rules: &[Vec<Vec<Symbol>>]) -> Vec<usize> {
    let mut best = vec![usize::MAX; rules.len()];
    loop {
        let mut changed = false;
        for (id, alternatives) in rules.iter().enumerate() {
            for symbols in alternatives {
                let length = symbols.iter().fold(0usize, |total, symbol| {
                    let one = match symbol {
                        Symbol::Char(_) => 1,
                        Symbol::Rule(rule) => best[*rule],
                    };
                    total.saturating_add(one)
                });
                if length < best[id] {
                    best[id] = length;
                    changed = true;
                }
            }
        }
        if !changed {
            return best;
        }
    }
}

/// A small deterministic random source (xorshift64*).
pub struct Rng(u64);

/// Characters a negated class is sampled from: markup, markers, blanks, letters of both
/// cases, non-ASCII, and characters XML refuses (which a sound grammar never allows).
const POOL: &[char] = &[
    'a', 'b', 'e', 'p', 'x', 'A', 'C', 'E', 'I', 'N', 'O', 'P', 'S', 'T', 'Z', '0', '7', ' ', '\n',
    '\t', '\r', '<', '/', '>', '&', ';', '"', '\'', '!', '[', ']', '-', '=', '#', ':', '_', '{',
    '}', ',', '\\', '|', '?', '.', '「', '始', '末', '」', '：', 'é', '中', '😀', '\u{1}',
    '\u{FFFE}', 'D', 'c', 'i', 'o', 'n', 't',
];

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn char_in(&mut self, set: &CharSet) -> char {
        if !set.negated {
            loop {
                let (low, high) = set.ranges[self.below(set.ranges.len())];
                let span = u64::from(high - low) + 1;
                if let Some(c) = char::from_u32(low + (self.next() % span) as u32) {
                    return c;
                }
            }
        }
        for _ in 0..64 {
            let c = POOL[self.below(POOL.len())];
            if set.matches(c) {
                return c;
            }
        }
        (0x20..0x7F)
            .chain(0xA0..0x3000)
            .filter_map(char::from_u32)
            .find(|c| set.matches(*c))
            .expect("a class that matches something")
    }
}
