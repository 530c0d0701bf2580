//! The discrete-event engine: integer nanoseconds and a priority queue.
//!
//! Events at the same instant fire in the order they were scheduled, so a
//! run depends only on its input and seed. Events are never removed from
//! the queue; an owner that changes its mind bumps a generation counter
//! and the stale event is ignored when it fires.

use std::collections::VecDeque;

/// Simulated time, nanoseconds since the start.
pub type Ns = u64;

/// A queue of future events: a radix heap (Ahuja, Mehlhorn, Orlin,
/// Tarjan 1990), which fits a simulation's clock because no event is ever
/// scheduled before the last one taken out.
///
/// ```text
/// bucket(at) = highest bit in which at differs from `last`
/// ```
///
/// Every event of a lower bucket is earlier than every event of a higher
/// one. When the events at `last` are used up, the lowest non-empty bucket
/// gives its earliest time (kept per bucket), which becomes `last`, and
/// its events move down (each to a strictly lower bucket, so an event
/// moves at most 63 times). Insertion and a look at the next time are
/// O(1); a binary heap of 10 000 timers costs ~14 compare-and-swaps on
/// scattered lines per pop.
///
/// Same-instant order: a bucket holds the events a move brought, in the
/// order they had, then those scheduled since, in order (a bucket only
/// receives a move while empty); so events of equal time stay in
/// scheduling order, as a (time, sequence) heap pops them.
pub struct Queue<E> {
    /// Events at `last`, in scheduling order.
    at_last: VecDeque<E>,
    /// `buckets[b]`: events whose time first differs from `last` in bit b.
    buckets: [Vec<(Ns, E)>; 64],
    /// Bit b set when `buckets[b]` is not empty.
    full: u64,
    /// `mins[b]`: the earliest time in `buckets[b]` (while not empty).
    mins: [Ns; 64],
    last: Ns,
    len: usize,
    now: Ns,
    /// Events popped so far (for events-per-second figures).
    pub fired: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            at_last: VecDeque::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            full: 0,
            mins: [Ns::MAX; 64],
            last: 0,
            len: 0,
            now: 0,
            fired: 0,
        }
    }
}

impl<E> Queue<E> {
    pub fn new() -> Queue<E> {
        Queue::default()
    }

    /// The time of the event being handled.
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedules `event` at `at` (an `at` before now means now).
    pub fn at(&mut self, at: Ns, event: E) {
        self.len += 1;
        // `last` <= now always: it moves only to an event taken out.
        let at = at.max(self.now);
        if at == self.last {
            self.at_last.push_back(event);
        } else {
            self.push(at, event);
        }
    }

    /// Puts an event at `at` (not `last`) in its bucket.
    #[inline]
    fn push(&mut self, at: Ns, event: E) {
        let b = (63 - (at ^ self.last).leading_zeros()) as usize;
        if self.full & (1 << b) == 0 {
            self.full |= 1 << b;
            self.mins[b] = at;
        } else {
            self.mins[b] = self.mins[b].min(at);
        }
        self.buckets[b].push((at, event));
    }

    /// Schedules `event` `delay` from now.
    pub fn after(&mut self, delay: Ns, event: E) {
        self.at(self.now.saturating_add(delay), event);
    }

    /// The lowest non-empty bucket and its earliest time (none: empty).
    fn lowest(&self) -> Option<(usize, Ns)> {
        if self.full == 0 {
            return None;
        }
        let b = self.full.trailing_zeros() as usize;
        Some((b, self.mins[b]))
    }

    /// Makes `min`, the earliest time of bucket `b` (the lowest), `last`,
    /// and moves that bucket's events down.
    fn redistribute(&mut self, b: usize, min: Ns) {
        self.last = min;
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.full &= !(1 << b);
        for (at, event) in moving.drain(..) {
            if at == min {
                self.at_last.push_back(event);
            } else {
                self.push(at, event);
            }
        }
        // Keep the allocation: the bucket fills again.
        self.buckets[b] = moving;
    }

    /// The next event, advancing the clock to it.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        self.pop_until(Ns::MAX)
    }

    /// The next event if it is due at `end` or before, advancing the
    /// clock to it.
    pub fn pop_until(&mut self, end: Ns) -> Option<(Ns, E)> {
        if self.at_last.is_empty() {
            let (b, min) = self.lowest()?;
            if min > end {
                return None;
            }
            if self.buckets[b].len() == 1 {
                // Alone in its bucket: nothing to move down.
                let (at, event) = self.buckets[b].pop()?;
                self.full &= !(1 << b);
                self.last = at;
                return Some(self.fire(event));
            }
            self.redistribute(b, min);
        } else if self.last > end {
            return None;
        }
        let event = self.at_last.pop_front()?;
        Some(self.fire(event))
    }

    /// Takes out `event`, due at `last`: the clock moves there.
    fn fire(&mut self, event: E) -> (Ns, E) {
        debug_assert!(self.last >= self.now, "time went backwards");
        self.now = self.last;
        self.len -= 1;
        self.fired += 1;
        (self.last, event)
    }

    /// Moves the clock to `to` when nothing is due before it (a caller
    /// outside the simulation acts at `to`); false when an event is.
    pub fn advance_to(&mut self, to: Ns) -> bool {
        if self.peek_time().is_some_and(|t| t < to) {
            return false;
        }
        self.now = self.now.max(to);
        true
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Ns> {
        if !self.at_last.is_empty() {
            // Events go to `at_last` only at `last` == now, and the clock
            // does not move on while they wait.
            debug_assert_eq!(self.last, self.now);
            return Some(self.last);
        }
        self.lowest().map(|(_, min)| min)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The Fx hash (rustc's): a multiply-rotate over words. Fast for the
/// short names and small integers the machine looks up on every event;
/// not for keys an adversary picks.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A HashMap with [`FxHasher`]; iteration order is still not to be relied on.
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// SplitMix64 (Steele, Lea, Flood 2014): a small, fast generator whose
/// output depends only on the seed — the simulator's only randomness.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift (bias < n/2^64).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_time_then_schedule_order() {
        let mut q = Queue::new();
        q.at(10, "b");
        q.at(5, "a");
        q.at(10, "c");
        q.after(0, "now");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(0, "now"), (5, "a"), (10, "b"), (10, "c")]);
        assert_eq!(q.fired, 4);
        // Never in the past.
        q.at(3, "late");
        assert_eq!(q.pop(), Some((10, "late")));
    }

    /// Against a (time, sequence) binary heap, the order this queue
    /// replaced: random schedules (some in the past, some at the end of
    /// time), pops, bounded pops and clock moves (some to before now).
    #[test]
    fn pops_as_a_time_then_sequence_heap_does() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for seed in 0..250 {
            let mut rng = Rng::new(seed);
            let mut q = Queue::new();
            let mut reference = BinaryHeap::new();
            let (mut seq, mut now, mut fired) = (0u64, 0u64, 0u64);
            // Narrow spreads make many equal times; wide ones many buckets
            // (the widest reaches the top ones).
            let spread = [1, 4, 1000, 1 << 40, u64::MAX >> 2][seed as usize % 5];
            // Now and then a little before now, else ahead.
            let around = |rng: &mut Rng, now: Ns| {
                if rng.below(8) == 0 {
                    now.saturating_sub(rng.below(spread))
                } else {
                    now.saturating_add(rng.below(spread))
                }
            };
            for _ in 0..2000 {
                match rng.below(10) {
                    0..=4 => {
                        let at = if rng.below(50) == 0 {
                            Ns::MAX
                        } else {
                            around(&mut rng, now)
                        };
                        seq += 1;
                        q.at(at, seq);
                        reference.push(Reverse((at.max(now), seq)));
                    }
                    5..=7 => {
                        let got = q.pop();
                        let want = reference.pop().map(|Reverse(e)| e);
                        assert_eq!(got, want, "seed {seed}");
                        if let Some((at, _)) = got {
                            (now, fired) = (at, fired + 1);
                        }
                    }
                    8 => {
                        let end = around(&mut rng, now);
                        let due = reference.peek().is_some_and(|Reverse((at, _))| *at <= end);
                        let got = q.pop_until(end);
                        let want = if due {
                            reference.pop().map(|Reverse(e)| e)
                        } else {
                            None
                        };
                        assert_eq!(got, want, "seed {seed}");
                        if let Some((at, _)) = got {
                            (now, fired) = (at, fired + 1);
                        }
                    }
                    _ => {
                        let to = around(&mut rng, now);
                        let free = reference.peek().is_none_or(|Reverse((at, _))| *at >= to);
                        assert_eq!(q.advance_to(to), free, "seed {seed}");
                        if free {
                            now = now.max(to);
                        }
                    }
                }
                assert_eq!((q.now(), q.fired), (now, fired));
                assert_eq!(q.len(), reference.len());
                assert_eq!(q.peek_time(), reference.peek().map(|Reverse((at, _))| *at));
            }
        }
    }

    #[test]
    fn rng_is_deterministic() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert!((0..1000).all(|_| a.below(7) < 7));
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
