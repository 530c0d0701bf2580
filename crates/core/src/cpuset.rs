//! A set of CPU numbers, read and written in the kernel's *cpulist* format.
//!
//! The kernel prints CPU masks as lists of ranges (`0-1,3`, see
//! `Documentation/admin-guide/cputopology.rst`) in sysfs
//! (`/sys/devices/system/cpu/online`), in cgroupfs (`cpuset.cpus`) and in
//! `/proc/PID/status` (`Cpus_allowed_list`). [`CpuSet`] parses every form
//! `bitmap_parselist()` (lib/bitmap-str.c) accepts: single CPUs, ranges and
//! strided groups (`0-15:2/4` = the first 2 of every 4 CPUs in 0–15), an
//! empty string for the empty set, and surrounding white space such as the
//! trailing newline of a sysfs file. It prints the canonical form the
//! kernel's `%*pbl` produces.

use std::fmt;
use std::str::FromStr;

/// The largest CPU number corral accepts (exclusive). Linux's `NR_CPUS`
/// tops out at 8192 today; the margin keeps a typo such as
/// `0-4000000000` from allocating gigabytes.
pub const MAX_CPUS: u32 = 1 << 16;

/// A set of CPU numbers, kept as a bitmap.
///
/// Equality and hashing ignore trailing empty words, so two sets with the
/// same members are equal however they were built.
#[derive(Clone, Default)]
pub struct CpuSet {
    words: Vec<u64>,
}

/// Why a cpulist could not be parsed. The message quotes the input and
/// names the offending element; callers add the file it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {input:?}: {kind}")]
pub struct ParseCpuListError {
    /// The text that was parsed (trimmed).
    pub input: String,
    /// What was wrong with it.
    pub kind: CpuListErrorKind,
}

/// The kinds of cpulist errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListErrorKind {
    /// An empty element, such as the one in `0,,1` or a trailing comma.
    #[error("empty element at position {0}")]
    EmptyElement(usize),
    /// A number that is missing or not a decimal integer (`0-`, `a`).
    #[error("{element:?} is not a CPU number or range: {what}")]
    BadElement {
        /// The element as written.
        element: String,
        /// What was expected.
        what: &'static str,
    },
    /// A range whose end is below its start (`3-1`).
    #[error("range {0:?} ends before it starts")]
    ReversedRange(String),
    /// A strided group with a zero or inconsistent group size (`0-7:3/2`).
    #[error("group {0:?} needs 0 < used <= group size")]
    BadGroup(String),
    /// A CPU number at or beyond [`MAX_CPUS`].
    #[error("CPU {0} is beyond the largest CPU number corral supports ({max})", max = MAX_CPUS - 1)]
    TooLarge(u64),
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// The set `0..n`.
    pub fn first_n(n: u32) -> Self {
        (0..n).collect()
    }

    /// Parses the kernel's cpulist format; see the module documentation.
    pub fn parse(text: &str) -> Result<Self, ParseCpuListError> {
        let input = text.trim();
        let err = |kind| ParseCpuListError {
            input: input.to_string(),
            kind,
        };
        let mut set = CpuSet::new();
        if input.is_empty() {
            return Ok(set);
        }
        for (index, element) in input.split(',').enumerate() {
            let element = element.trim();
            if element.is_empty() {
                return Err(err(CpuListErrorKind::EmptyElement(index)));
            }
            let (range, group) = match element.split_once(':') {
                Some((range, group)) => (range, Some(group)),
                None => (element, None),
            };
            let (start, end) = match range.split_once('-') {
                Some((a, b)) => (
                    parse_cpu(a, element).map_err(err)?,
                    parse_cpu(b, element).map_err(err)?,
                ),
                None => {
                    let cpu = parse_cpu(range, element).map_err(err)?;
                    (cpu, cpu)
                }
            };
            if end < start {
                return Err(err(CpuListErrorKind::ReversedRange(element.to_string())));
            }
            let (used, size) = match group {
                None => (1, 1),
                Some(group) => {
                    let bad = || err(CpuListErrorKind::BadGroup(element.to_string()));
                    let (used, size) = group.split_once('/').ok_or_else(bad)?;
                    let used: u32 = used.trim().parse().map_err(|_| bad())?;
                    let size: u32 = size.trim().parse().map_err(|_| bad())?;
                    if used == 0 || size == 0 || used > size {
                        return Err(bad());
                    }
                    (used, size)
                }
            };
            let mut base = start;
            while base <= end {
                for cpu in base..(base + used).min(end + 1) {
                    set.insert(cpu);
                }
                base += size;
            }
        }
        Ok(set)
    }

    /// Adds `cpu`. Panics if `cpu >= MAX_CPUS` (a programming error: parsed
    /// input is checked before it gets here).
    pub fn insert(&mut self, cpu: u32) {
        assert!(cpu < MAX_CPUS, "CPU {cpu} out of range");
        let (word, bit) = (cpu as usize / 64, cpu % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << bit;
    }

    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: u32) {
        if let Some(w) = self.words.get_mut(cpu as usize / 64) {
            *w &= !(1 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get(cpu as usize / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// The number of CPUs in the set.
    pub fn len(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + bit)
            })
        })
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        self.words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, &w)| w != 0)
            .map(|(i, &w)| i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let words = (0..n).map(|i| self.word(i) | other.word(i)).collect();
        CpuSet { words }
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().min(other.words.len());
        let words = (0..n).map(|i| self.word(i) & other.word(i)).collect();
        CpuSet { words }
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let words = (0..self.words.len())
            .map(|i| self.word(i) & !other.word(i))
            .collect();
        CpuSet { words }
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        (0..self.words.len()).all(|i| self.word(i) & !other.word(i) == 0)
    }

    fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    /// Maximal runs of consecutive CPUs, as inclusive `(first, last)` pairs.
    pub fn ranges(&self) -> Vec<(u32, u32)> {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for cpu in self.iter() {
            match ranges.last_mut() {
                Some((_, last)) if *last + 1 == cpu => *last = cpu,
                _ => ranges.push((cpu, cpu)),
            }
        }
        ranges
    }
}

fn parse_cpu(text: &str, element: &str) -> Result<u32, CpuListErrorKind> {
    let text = text.trim();
    let bad = |what| CpuListErrorKind::BadElement {
        element: element.to_string(),
        what,
    };
    if text.is_empty() {
        return Err(bad("a number is missing"));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("expected a decimal CPU number"));
    }
    let value: u64 = text
        .parse()
        .map_err(|_| CpuListErrorKind::TooLarge(u64::MAX))?;
    if value >= u64::from(MAX_CPUS) {
        return Err(CpuListErrorKind::TooLarge(value));
    }
    Ok(value as u32)
}

impl FromStr for CpuSet {
    type Err = ParseCpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse(s)
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.word(i) == other.word(i))
    }
}

impl Eq for CpuSet {}

impl std::hash::Hash for CpuSet {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let n = self
            .words
            .iter()
            .rposition(|&w| w != 0)
            .map_or(0, |i| i + 1);
        self.words[..n].hash(state);
    }
}

/// Prints the canonical cpulist (`0-1,3`); the empty set prints as nothing,
/// exactly as the kernel writes an empty mask.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (a, b)) in self.ranges().into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

/// Serialized as its cpulist string, the form every kernel interface uses.
impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        CpuSet::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(text: &str) -> CpuSet {
        CpuSet::parse(text).unwrap()
    }

    #[test]
    fn parses_kernel_forms() {
        assert_eq!(set("0-1,3").iter().collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(set("0-1,3\n").to_string(), "0-1,3");
        assert!(set("").is_empty());
        assert!(set("\n").is_empty());
        assert_eq!(set("5").len(), 1);
        assert_eq!(set("0-127").len(), 128);
        assert_eq!(set("3,1,2").to_string(), "1-3");
        // lib/bitmap-str.c: "0-15:2/4" is the first 2 CPUs of every 4.
        assert_eq!(set("0-15:2/4").to_string(), "0-1,4-5,8-9,12-13");
        assert_eq!(set("0-6:2/4").to_string(), "0-1,4-5");
    }

    #[test]
    fn malformed_lists_say_what_is_wrong() {
        let e = CpuSet::parse("0-").unwrap_err();
        assert_eq!(e.input, "0-");
        assert!(e.to_string().contains("a number is missing"), "{e}");
        assert!(matches!(
            CpuSet::parse("3-1").unwrap_err().kind,
            CpuListErrorKind::ReversedRange(_)
        ));
        assert!(matches!(
            CpuSet::parse("0,,1").unwrap_err().kind,
            CpuListErrorKind::EmptyElement(1)
        ));
        assert!(matches!(
            CpuSet::parse("0,").unwrap_err().kind,
            CpuListErrorKind::EmptyElement(1)
        ));
        assert!(matches!(
            CpuSet::parse("x").unwrap_err().kind,
            CpuListErrorKind::BadElement { .. }
        ));
        assert!(matches!(
            CpuSet::parse("-1").unwrap_err().kind,
            CpuListErrorKind::BadElement { .. }
        ));
        assert!(matches!(
            CpuSet::parse("0-4000000000").unwrap_err().kind,
            CpuListErrorKind::TooLarge(4_000_000_000)
        ));
        assert!(matches!(
            CpuSet::parse("0-7:3/2").unwrap_err().kind,
            CpuListErrorKind::BadGroup(_)
        ));
    }

    #[test]
    fn set_algebra() {
        let a = set("0-3");
        let b = set("2-5,64");
        assert_eq!(a.union(&b).to_string(), "0-5,64");
        assert_eq!(a.intersection(&b).to_string(), "2-3");
        assert_eq!(b.difference(&a).to_string(), "4-5,64");
        assert!(set("1-2").is_subset(&a));
        assert!(!b.is_subset(&a));
        assert_eq!(b.first(), Some(2));
        assert_eq!(b.last(), Some(64));
        assert_eq!(CpuSet::new().last(), None);
        // Equality ignores how many words were allocated.
        let mut c = set("1,100");
        c.remove(100);
        assert_eq!(c, set("1"));
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(cpus in proptest::collection::btree_set(0u32..300, 0..40)) {
            let s: CpuSet = cpus.iter().copied().collect();
            let text = s.to_string();
            let back = CpuSet::parse(&text).unwrap();
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), cpus.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn algebra_matches_btreeset(
            a in proptest::collection::btree_set(0u32..200, 0..30),
            b in proptest::collection::btree_set(0u32..200, 0..30),
        ) {
            let (sa, sb): (CpuSet, CpuSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(sa.union(&sb).iter().collect::<Vec<_>>(), a.union(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.intersection(&sb).iter().collect::<Vec<_>>(), a.intersection(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.difference(&sb).iter().collect::<Vec<_>>(), a.difference(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.is_subset(&sb), a.is_subset(&b));
            prop_assert_eq!(sa.len() as usize, a.len());
        }
    }
}
