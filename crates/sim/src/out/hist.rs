//! Histograms of latencies: fixed memory however long the run.
//!
//! The layout is HdrHistogram's log-linear one: values below 64 have a
//! bucket each; above, every power of two is split into 64 buckets, so a
//! bucket's width is under 1/64 of its values (a percentile is off by
//! less than 1.6 %). The minimum, maximum, count and sum are exact, and a
//! percentile never leaves [min, max]. The first 64 values are kept as
//! they are (exact percentiles, little memory for the many threads that
//! wake rarely); the 65th moves them into buckets. Buckets are held 64
//! to a block (one block per power of two), a block allocated when a
//! value first falls in it: a thread's latencies span a few powers of
//! two, so it keeps a few blocks, not the ~1 400 buckets up to its
//! largest value (10 000 simulated threads kept 5 KiB each).

use serde::Serialize;

const SUB_BITS: u32 = 6;
/// Values kept raw before the buckets take over.
const RAW: usize = 64;
const SUB: u64 = 1 << SUB_BITS;
/// Blocks of `SUB` buckets: the exact values below 64, then one per
/// power of two from 2⁶ to 2⁶³.
const BLOCKS: usize = 59;

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let group = (e - SUB_BITS) as u64;
    let sub = (v >> group) - SUB; // the top SUB_BITS bits after the leading 1
    (SUB + group * SUB + sub) as usize
}

fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let group = (i - SUB) / SUB;
    let sub = (i - SUB) % SUB;
    (SUB + sub) << group
}

/// Non-negative values (ns). `repr(C)`, in the order written: what
/// [`Histogram::record`] reads every time first (a value lands in the
/// same cache line or two, however many blocks it has).
#[derive(Debug, Clone, Serialize)]
#[repr(C)]
pub struct Histogram {
    #[serde(skip)]
    sum: u128,
    pub count: u64,
    pub min: u64,
    pub max: u64,
    #[serde(skip)]
    raw: Vec<u64>,
    /// The allocated blocks of buckets, in the order first used.
    #[serde(skip)]
    counts: Vec<u32>,
    /// `slot[b]`: where block `b` starts in `counts`, over `SUB`, plus
    /// one (0: not allocated).
    #[serde(skip)]
    slot: [u8; BLOCKS],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            raw: Vec::new(),
            counts: Vec::new(),
            slot: [0; BLOCKS],
            count: 0,
            min: 0,
            max: 0,
            sum: 0,
        }
    }
}

/// Equal when they hold the same values (to within a bucket once
/// bucketed), whatever order their blocks were allocated in.
impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        (self.count, self.min, self.max, self.sum) == (other.count, other.min, other.max, other.sum)
            && self.raw == other.raw
            && self.buckets().eq(other.buckets())
    }
}
impl Eq for Histogram {}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() && self.raw.len() < RAW {
            // Two allocations on the way to `RAW` values, not five (the
            // doubling's 4, 8, 16, 32 and 64, each but the first a copy).
            if self.raw.len() == self.raw.capacity() {
                self.raw.reserve_exact(if self.raw.is_empty() {
                    RAW / 4
                } else {
                    RAW - self.raw.len()
                });
            }
            self.raw.push(v);
        } else {
            for x in std::mem::take(&mut self.raw) {
                self.bucket(x);
            }
            self.bucket(v);
        }
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v as u128;
    }

    /// Adds `n` to bucket `i`'s count.
    fn add(&mut self, i: usize, n: u32) {
        let b = i / SUB as usize;
        if self.slot[b] == 0 {
            self.counts.resize(self.counts.len() + SUB as usize, 0);
            self.slot[b] = (self.counts.len() / SUB as usize) as u8;
        }
        let at = (self.slot[b] as usize - 1) * SUB as usize + i % SUB as usize;
        self.counts[at] = self.counts[at].saturating_add(n);
    }

    fn bucket(&mut self, v: u64) {
        self.add(index(v), 1);
    }

    /// The non-empty buckets, lowest first: (bucket index, count).
    fn buckets(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.slot
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .flat_map(move |(b, &s)| {
                let at = (s as usize - 1) * SUB as usize;
                self.counts[at..at + SUB as usize]
                    .iter()
                    .enumerate()
                    .map(move |(k, &c)| (b * SUB as usize + k, c))
            })
            .filter(|&(_, c)| c > 0)
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds every value of `other` (a histogram over several threads).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if other.counts.is_empty() {
            // Its values are still exact.
            for &v in &other.raw {
                self.record(v);
            }
            return;
        }
        for v in std::mem::take(&mut self.raw) {
            self.bucket(v);
        }
        for (i, c) in other.buckets() {
            self.add(i, c);
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at rank ⌈p/100 · count⌉ (nearest rank), to within a
    /// bucket; 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count as f64)
            .ceil()
            .clamp(1.0, self.count as f64) as u64;
        self.at_rank(rank)
    }

    /// The value of rank `rank` (1 = smallest), to within a bucket.
    fn at_rank(&self, rank: u64) -> u64 {
        if self.counts.is_empty() {
            let mut r = self.raw.clone();
            r.sort_unstable();
            return r.get(rank as usize - 1).copied().unwrap_or(self.max);
        }
        let mut seen = 0u64;
        for (i, c) in self.buckets() {
            seen += c as u64;
            if seen >= rank {
                return lower(i).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

/// Values of either sign (rt-app's slack: negative when late).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignedHistogram {
    neg: Histogram,
    pos: Histogram,
}

impl SignedHistogram {
    pub fn record(&mut self, v: i64) {
        if v < 0 {
            self.neg.record(v.unsigned_abs());
        } else {
            self.pos.record(v as u64);
        }
    }

    pub fn count(&self) -> u64 {
        self.neg.count + self.pos.count
    }

    pub fn min(&self) -> Option<i64> {
        if !self.neg.is_empty() {
            Some(-(self.neg.max as i64))
        } else if !self.pos.is_empty() {
            Some(self.pos.min as i64)
        } else {
            None
        }
    }

    /// Nearest-rank percentile over both signs; None when empty.
    pub fn percentile(&self, p: f64) -> Option<i64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as u64;
        Some(if rank <= self.neg.count {
            // The negatives, most negative first: rank r is the
            // (count − r + 1)-th smallest magnitude.
            -(self.neg.at_rank(self.neg.count - rank + 1) as i64)
        } else {
            self.pos.at_rank(rank - self.neg.count) as i64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_then_within_a_64th() {
        for v in [
            0u64,
            1,
            63,
            64,
            127,
            128,
            129,
            1000,
            9_000_000,
            u64::MAX / 3,
        ] {
            let (i, lo) = (index(v), lower(index(v)));
            assert!(lo <= v, "{v}: lower {lo}");
            assert!(v - lo <= v / 64, "{v}: lower {lo}");
            assert!(
                lower(i + 1) > v,
                "{v}: next bucket starts at {}",
                lower(i + 1)
            );
        }
        for v in 0..200u64 {
            assert!(index(v + 1) >= index(v));
        }
    }

    #[test]
    fn merged_histograms_are_the_histogram_of_every_value() {
        let xs: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 100_003).collect();
        // Exact (under 64 values) into bucketed, bucketed into exact, and
        // bucketed into bucketed give what recording all of them gives.
        for split in [10usize, 990, 500] {
            let (mut a, mut b, mut all) = (
                Histogram::default(),
                Histogram::default(),
                Histogram::default(),
            );
            for &x in &xs[..split] {
                a.record(x);
            }
            for &x in &xs[split..] {
                b.record(x);
            }
            for &x in &xs {
                all.record(x);
            }
            a.merge(&b);
            assert_eq!((a.count, a.min, a.max), (all.count, all.min, all.max));
            for p in [1.0, 50.0, 99.0] {
                assert_eq!(a.percentile(p), all.percentile(p), "split {split}, p{p}");
            }
        }
    }

    #[test]
    fn percentiles_match_sorted_samples_within_the_bucket_error() {
        let mut h = Histogram::default();
        let mut xs: Vec<u64> = (0..10_000u64).map(|i| (i * 7919) % 1_000_003).collect();
        for &x in &xs {
            h.record(x);
        }
        xs.sort_unstable();
        for p in [1.0, 50.0, 90.0, 99.0, 100.0] {
            let exact = xs[((p / 100.0 * xs.len() as f64).ceil() as usize).max(1) - 1];
            let got = h.percentile(p);
            assert!(
                got <= exact && exact - got <= exact / 64,
                "p{p}: {got} vs {exact}"
            );
        }
        assert_eq!((h.min, h.max, h.count), (xs[0], xs[9999], 10_000));
        // One repeated value is reported exactly.
        let mut one = Histogram::default();
        (0..5).for_each(|_| one.record(9_000_000));
        assert_eq!(one.percentile(50.0), 9_000_000);
    }

    #[test]
    fn blocks_are_allocated_for_the_powers_of_two_used() {
        // 65 values between 2²⁰ and 2²¹ ns: one block of 64 buckets, where a
        // flat array would hold every bucket up to 2 ms (~1 200).
        let mut h = Histogram::default();
        for i in 0..65u64 {
            h.record((1 << 20) + i * 10_000);
        }
        assert_eq!(h.counts.len(), 64);
        // The same values in another order (blocks allocated in another
        // order) are the same histogram.
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        let xs = [5u64, 70, 9_000, 130, 1 << 40, 64, 5];
        for &x in xs.iter().cycle().take(98) {
            a.record(x);
        }
        for &x in xs.iter().rev().cycle().take(98) {
            b.record(x);
        }
        assert_ne!(a.counts, b.counts, "blocks in another order");
        assert_eq!(a, b);
        assert_eq!(a.percentile(100.0), 1 << 40);
        assert_eq!(a.percentile(1.0), 5);
    }

    #[test]
    fn signed_values_order_negatives_first() {
        let mut s = SignedHistogram::default();
        for v in [-5i64, -1, 0, 3, 10] {
            s.record(v);
        }
        assert_eq!(s.min(), Some(-5));
        assert_eq!(s.percentile(20.0), Some(-5));
        assert_eq!(s.percentile(40.0), Some(-1));
        assert_eq!(s.percentile(60.0), Some(0));
        assert_eq!(s.percentile(100.0), Some(10));
        assert_eq!(SignedHistogram::default().percentile(50.0), None);
    }
}
