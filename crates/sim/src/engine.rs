//! The discrete-event engine: integer nanoseconds and a priority queue.
//!
//! Events at the same instant fire in the order they were scheduled (a
//! sequence number breaks ties), so a run depends only on its input and
//! seed. Events are never removed from the queue; an owner that changes its
//! mind bumps a generation counter and the stale event is ignored when it
//! fires — O(log n) insertion and removal, no search.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

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

/// An ordered set for run queues: a sorted vector while small (no
/// allocation when it empties and fills again, as queues do all the time;
/// cache-friendly scans), a B-tree once it holds more than 256 entries
/// (back to the vector below 64).
#[derive(Debug, Clone)]
pub enum OrderedSet<T: Ord + Copy> {
    Small(Vec<T>),
    Big(BTreeSet<T>),
}

impl<T: Ord + Copy> Default for OrderedSet<T> {
    fn default() -> Self {
        OrderedSet::Small(Vec::new())
    }
}

const SET_GROW: usize = 256;
const SET_SHRINK: usize = 64;

impl<T: Ord + Copy> OrderedSet<T> {
    /// Adds `x`; false if it was there.
    pub fn insert(&mut self, x: T) -> bool {
        match self {
            OrderedSet::Small(v) => match v.binary_search(&x) {
                Ok(_) => false,
                Err(i) => {
                    v.insert(i, x);
                    if v.len() > SET_GROW {
                        *self = OrderedSet::Big(v.iter().copied().collect());
                    }
                    true
                }
            },
            OrderedSet::Big(b) => b.insert(x),
        }
    }

    /// Removes `x`; false if it was not there.
    pub fn remove(&mut self, x: &T) -> bool {
        match self {
            OrderedSet::Small(v) => match v.binary_search(x) {
                Ok(i) => {
                    v.remove(i);
                    true
                }
                Err(_) => false,
            },
            OrderedSet::Big(b) => {
                let was = b.remove(x);
                if b.len() < SET_SHRINK {
                    *self = OrderedSet::Small(b.iter().copied().collect());
                }
                was
            }
        }
    }

    pub fn first(&self) -> Option<&T> {
        match self {
            OrderedSet::Small(v) => v.first(),
            OrderedSet::Big(b) => b.first(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            OrderedSet::Small(v) => v.len(),
            OrderedSet::Big(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// In order.
    pub fn iter(&self) -> SetIter<'_, T> {
        match self {
            OrderedSet::Small(v) => SetIter::Small(v.iter()),
            OrderedSet::Big(b) => SetIter::Big(b.iter()),
        }
    }
}

impl<'a, T: Ord + Copy> IntoIterator for &'a OrderedSet<T> {
    type Item = &'a T;
    type IntoIter = SetIter<'a, T>;
    fn into_iter(self) -> SetIter<'a, T> {
        self.iter()
    }
}

/// [`OrderedSet::iter`].
pub enum SetIter<'a, T> {
    Small(std::slice::Iter<'a, T>),
    Big(std::collections::btree_set::Iter<'a, T>),
}

impl<'a, T> Iterator for SetIter<'a, T> {
    type Item = &'a T;
    fn next(&mut self) -> Option<&'a T> {
        match self {
            SetIter::Small(i) => i.next(),
            SetIter::Big(i) => i.next(),
        }
    }
}

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
    fn ordered_set_grows_into_a_tree_and_back_keeping_order() {
        let mut s = OrderedSet::default();
        let mut model = BTreeSet::new();
        let mut rng = Rng::new(7);
        for round in 0..20_000u64 {
            let x = rng.below(600);
            // Mostly insert for a while, then mostly remove: crosses both
            // thresholds several times.
            let insert = (round / 2000) % 2 == 0;
            if insert == (rng.below(10) < 8) {
                assert_eq!(s.insert(x), model.insert(x));
            } else {
                assert_eq!(s.remove(&x), model.remove(&x));
            }
            assert_eq!(s.len(), model.len());
            assert_eq!(s.first(), model.first());
        }
        assert!(s.iter().eq(model.iter()));
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
