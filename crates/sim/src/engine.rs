//! The discrete-event engine: integer nanoseconds and a priority queue.
//!
//! Events at the same instant fire in the order they were scheduled (a
//! sequence number breaks ties), so a run depends only on its input and
//! seed. Events are never removed from the queue; an owner that changes its
//! mind bumps a generation counter and the stale event is ignored when it
//! fires — O(log n) insertion and removal, no search.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// Simulated time, nanoseconds since the start.
pub type Ns = u64;

struct Entry<E> {
    at: Ns,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A queue of future events. Events for the current instant (the
/// kernel's resched IPIs) wait in a FIFO beside the heap; popping takes
/// whichever of the two comes first by (time, sequence), so the order is
/// exactly the heap's alone.
pub struct Queue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    now_fifo: VecDeque<(u64, E)>,
    seq: u64,
    now: Ns,
    /// Events popped so far (for events-per-second figures).
    pub fired: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            now_fifo: VecDeque::new(),
            seq: 0,
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

    /// Schedules `event` at `at` (never before now).
    pub fn at(&mut self, at: Ns, event: E) {
        self.seq += 1;
        if at <= self.now {
            self.now_fifo.push_back((self.seq, event));
            return;
        }
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
    }

    /// Schedules `event` `delay` from now.
    pub fn after(&mut self, delay: Ns, event: E) {
        self.at(self.now.saturating_add(delay), event);
    }

    /// The next event, advancing the clock to it.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        if let Some(&(seq, _)) = self.now_fifo.front() {
            let heap_first = self
                .heap
                .peek()
                .is_some_and(|Reverse(e)| (e.at, e.seq) < (self.now, seq));
            if !heap_first {
                let (_, event) = self.now_fifo.pop_front()?;
                self.fired += 1;
                return Some((self.now, event));
            }
        }
        let Reverse(e) = self.heap.pop()?;
        debug_assert!(e.at >= self.now, "time went backwards");
        self.now = e.at;
        self.fired += 1;
        Some((e.at, e.event))
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
        if !self.now_fifo.is_empty() {
            return Some(self.now);
        }
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.now_fifo.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.now_fifo.is_empty()
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
