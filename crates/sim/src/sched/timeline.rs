//! A fair run queue's tree (`cfs_rq->tasks_timeline`): its queued
//! entities, curr excepted, in key order — virtual deadline in the EEVDF
//! era, vruntime in the CFS era — with each subtree's smallest vruntime
//! kept at its root, as the kernel augments its rb-tree
//! (`min_vruntime_cb`, `min_vruntime_update`). That is what lets
//! `pick_eevdf` find the earliest deadline among eligible entities in
//! O(log n): a subtree whose smallest vruntime is not eligible holds no
//! eligible entity and is skipped ([`Timeline::first_eligible`]).
//!
//! XXX: a treap, not a red-black tree: the same order and the same
//! answers, in O(log n) expected rather than worst-case, in a third of
//! the code. A node's priority comes from a counter of insertions, hashed,
//! so a run still depends on its input alone. Written by hand: no crate
//! of the few this workspace allows keeps an augmented ordered tree.
//!
//! A queue of a few entities, the common case, is a sorted vector
//! instead, scanned in order: at most [`GROW`] looked at, no pointers to
//! chase. It becomes the tree past [`GROW`] and a vector again below
//! [`SHRINK`].

/// No node.
const NIL: u32 = u32::MAX;

/// The vector becomes a tree when it would hold more than this many.
pub const GROW: usize = 256;
/// The tree becomes a vector again when it holds fewer than this many.
pub const SHRINK: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Node {
    key: i64,
    /// Breaks ties of `key`: the order of insertion.
    ord: u64,
    id: usize,
    /// The entity's vruntime when it was queued (the owner never changes
    /// a queued entity's vruntime: it takes the entity out first).
    v: i64,
    /// The smallest `v` of the subtree rooted here (`se->min_vruntime`).
    min_v: i64,
    prio: u64,
    left: u32,
    right: u32,
}

/// Queued entities by `(key, ord)`, each with its id and vruntime. `ord`
/// is the order the owner queued them in: equal keys keep it, as the
/// kernel's rb-tree does (`__enqueue_entity`'s `rb_add_augmented_cached`
/// with `__entity_less`, a strict compare, puts a new node after those
/// with the same key).
#[derive(Debug, Clone)]
pub struct Timeline {
    /// While not `big`: every entry, `(key, ord, id, v)`, in order.
    small: Vec<(i64, u64, usize, i64)>,
    big: bool,
    /// [`GROW`] and [`SHRINK`] (smaller in tests, to cross them often).
    grow: usize,
    shrink: usize,
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    len: usize,
    /// Insertions so far (priorities are drawn from it).
    seq: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            small: Vec::new(),
            big: false,
            grow: GROW,
            shrink: SHRINK,
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
            seq: 0,
        }
    }
}

/// SplitMix64's finaliser: a counter's value as a well-spread priority.
fn spread(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Timeline {
    #[cfg(test)]
    fn with_limits(grow: usize, shrink: usize) -> Timeline {
        Timeline {
            grow,
            shrink,
            ..Timeline::default()
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn n(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn n_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn at(&self, i: u32) -> (i64, u64) {
        let n = self.n(i);
        (n.key, n.ord)
    }

    /// `min_vruntime_update`: a node's subtree minimum from its own
    /// vruntime and its children's minima.
    fn pull(&mut self, i: u32) {
        let (l, r, mut m) = {
            let n = self.n(i);
            (n.left, n.right, n.v)
        };
        if l != NIL {
            m = m.min(self.n(l).min_v);
        }
        if r != NIL {
            m = m.min(self.n(r).min_v);
        }
        self.n_mut(i).min_v = m;
    }

    /// Splits subtree `t` into the nodes before `k` and those from it on.
    fn split(&mut self, t: u32, k: (i64, u64)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.at(t) < k {
            let (a, b) = self.split(self.n(t).right, k);
            self.n_mut(t).right = a;
            self.pull(t);
            (t, b)
        } else {
            let (a, b) = self.split(self.n(t).left, k);
            self.n_mut(t).left = b;
            self.pull(t);
            (a, t)
        }
    }

    /// Joins two subtrees, every key of `a` before every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.n(a).prio > self.n(b).prio {
            let r = self.merge(self.n(a).right, b);
            self.n_mut(a).right = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.n(b).left);
            self.n_mut(b).left = l;
            self.pull(b);
            b
        }
    }

    fn insert_at(&mut self, t: u32, i: u32) -> u32 {
        if t == NIL {
            return i;
        }
        if self.n(i).prio > self.n(t).prio {
            let (a, b) = self.split(t, self.at(i));
            let n = self.n_mut(i);
            n.left = a;
            n.right = b;
            self.pull(i);
            return i;
        }
        if self.at(i) < self.at(t) {
            let l = self.insert_at(self.n(t).left, i);
            self.n_mut(t).left = l;
        } else {
            let r = self.insert_at(self.n(t).right, i);
            self.n_mut(t).right = r;
        }
        self.pull(t);
        t
    }

    /// Queues entity `id` at `key` with vruntime `v` (`__enqueue_entity`),
    /// after any queued with the same key if `ord` is larger than theirs
    /// (the owner counts its insertions). The caller never queues one
    /// `(key, ord)` twice.
    pub fn insert(&mut self, key: i64, ord: u64, id: usize, v: i64) {
        if !self.big {
            let at = self.small.partition_point(|e| (e.0, e.1) < (key, ord));
            self.small.insert(at, (key, ord, id, v));
            self.len += 1;
            if self.small.len() > self.grow {
                self.big = true;
                self.len = 0;
                for (k, o, i, v) in std::mem::take(&mut self.small) {
                    self.insert_node(k, o, i, v);
                }
            }
            return;
        }
        self.insert_node(key, ord, id, v);
    }

    fn insert_node(&mut self, key: i64, ord: u64, id: usize, v: i64) {
        self.seq += 1;
        let node = Node {
            key,
            ord,
            id,
            v,
            min_v: v,
            prio: spread(self.seq),
            left: NIL,
            right: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.root = self.insert_at(self.root, i);
        self.len += 1;
    }

    fn remove_at(&mut self, t: u32, k: (i64, u64)) -> (u32, bool) {
        if t == NIL {
            return (NIL, false);
        }
        let here = self.at(t);
        if k == here {
            let (l, r) = (self.n(t).left, self.n(t).right);
            self.free.push(t);
            return (self.merge(l, r), true);
        }
        let found = if k < here {
            let (l, f) = self.remove_at(self.n(t).left, k);
            self.n_mut(t).left = l;
            f
        } else {
            let (r, f) = self.remove_at(self.n(t).right, k);
            self.n_mut(t).right = r;
            f
        };
        if found {
            self.pull(t);
        }
        (t, found)
    }

    /// Takes `(key, ord)` out (`__dequeue_entity`); false if it was not
    /// queued.
    pub fn remove(&mut self, key: i64, ord: u64) -> bool {
        if !self.big {
            let Ok(at) = self.small.binary_search_by(|e| (e.0, e.1).cmp(&(key, ord))) else {
                return false;
            };
            self.small.remove(at);
            self.len -= 1;
            return true;
        }
        let (root, found) = self.remove_at(self.root, (key, ord));
        self.root = root;
        if found {
            self.len -= 1;
        }
        if self.len < self.shrink {
            let mut small = std::mem::take(&mut self.small);
            small.extend(self.entries());
            self.nodes.clear();
            self.free.clear();
            self.root = NIL;
            self.big = false;
            self.small = small;
        }
        found
    }

    /// The tree's entries in order, `(key, ord, id, v)`.
    fn entries(&self) -> Vec<(i64, u64, usize, i64)> {
        let mut walk = self.iter();
        std::iter::from_fn(|| walk.next_node())
            .map(|i| {
                let n = self.n(i);
                (n.key, n.ord, n.id, n.v)
            })
            .collect()
    }

    /// The leftmost entry (`__pick_first_entity`).
    pub fn first(&self) -> Option<(i64, usize)> {
        if !self.big {
            return self.small.first().map(|e| (e.0, e.2));
        }
        let mut i = self.root;
        if i == NIL {
            return None;
        }
        while self.n(i).left != NIL {
            i = self.n(i).left;
        }
        Some((self.n(i).key, self.n(i).id))
    }

    /// The leftmost entity whose vruntime passes `eligible` — a test that
    /// holds for every vruntime up to some bound, as `v ≤ V` does — and
    /// the nodes visited: the descent of `__pick_eevdf`, which goes left
    /// while the left subtree's smallest vruntime is eligible, takes the
    /// node if it is, else goes right.
    pub fn first_eligible(&self, eligible: impl Fn(i64) -> bool) -> (Option<usize>, u64) {
        if !self.big {
            let mut visited = 0;
            let found = self.small.iter().find(|e| {
                visited += 1;
                eligible(e.3)
            });
            return (found.map(|e| e.2), visited);
        }
        let (mut i, mut visited) = (self.root, 0);
        while i != NIL {
            visited += 1;
            let n = self.n(i);
            if n.left != NIL && eligible(self.n(n.left).min_v) {
                i = n.left;
                continue;
            }
            if eligible(n.v) {
                return (Some(n.id), visited);
            }
            i = n.right;
        }
        (None, visited)
    }

    /// The entries in order, as `(key, id)`.
    pub fn iter(&self) -> Iter<'_> {
        let mut it = Iter {
            t: self,
            small: self.small.iter(),
            stack: Vec::new(),
        };
        if self.big {
            it.descend(self.root);
        }
        it
    }
}

/// [`Timeline::iter`]: the vector's entries, or an in-order walk of the
/// tree.
pub struct Iter<'a> {
    t: &'a Timeline,
    small: std::slice::Iter<'a, (i64, u64, usize, i64)>,
    stack: Vec<u32>,
}

impl Iter<'_> {
    fn descend(&mut self, mut i: u32) {
        while i != NIL {
            self.stack.push(i);
            i = self.t.n(i).left;
        }
    }

    /// The tree's next node in order.
    fn next_node(&mut self) -> Option<u32> {
        let i = self.stack.pop()?;
        self.descend(self.t.n(i).right);
        Some(i)
    }
}

impl Iterator for Iter<'_> {
    type Item = (i64, usize);
    fn next(&mut self) -> Option<(i64, usize)> {
        if !self.t.big {
            return self.small.next().map(|e| (e.0, e.2));
        }
        self.next_node().map(|i| (self.t.n(i).key, self.t.n(i).id))
    }
}

impl<'a> IntoIterator for &'a Timeline {
    type Item = (i64, usize);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the tree must answer, from a plain list: the order, and the
    /// first entry in it whose vruntime is at most `bound`.
    fn model_first(list: &[(i64, usize, i64)], bound: i64) -> Option<usize> {
        let mut sorted = list.to_vec();
        sorted.sort();
        sorted.iter().find(|e| e.2 <= bound).map(|e| e.1)
    }

    proptest! {
        /// `__pick_eevdf`'s descent finds what a scan in deadline order
        /// finds, and the tree keeps its order, through any sequence of
        /// enqueues and dequeues.
        #[test]
        fn the_descent_finds_the_first_eligible_entity_in_key_order(
            ops in proptest::collection::vec((0i64..50, -40i64..40, 0u8..4, -40i64..40), 1..300)
        ) {
            // Limits of 8 and 3: the vector and the tree both, and the
            // changes between them, many times over.
            let mut t = Timeline::with_limits(8, 3);
            let mut list: Vec<(i64, usize, i64)> = Vec::new();
            for (id, (key, v, op, bound)) in ops.into_iter().enumerate() {
                // As many enqueues as dequeues: a walk that
                // wanders across both limits.
                if op < 2 || list.is_empty() {
                    t.insert(key, id as u64, id, v);
                    list.push((key, id, v));
                } else {
                    let j = (bound.unsigned_abs() as usize) % list.len();
                    let (k, i, _) = list.swap_remove(j);
                    prop_assert!(t.remove(k, i as u64));
                    prop_assert!(!t.remove(k, i as u64));
                }
                let mut sorted = list.clone();
                sorted.sort();
                let want: Vec<(i64, usize)> = sorted.iter().map(|e| (e.0, e.1)).collect();
                prop_assert_eq!(t.iter().collect::<Vec<_>>(), want.clone());
                prop_assert_eq!(t.first(), want.first().copied());
                prop_assert_eq!(t.len(), list.len());
                let (got, visited) = t.first_eligible(|v| v <= bound);
                prop_assert_eq!(got, model_first(&list, bound));
                prop_assert!(visited as usize <= list.len());
            }
            // Emptied again (past the tree's shrinking back to a vector).
            while let Some((k, i, _)) = list.pop() {
                prop_assert!(t.remove(k, i as u64));
                let mut sorted = list.clone();
                sorted.sort();
                let want: Vec<(i64, usize)> = sorted.iter().map(|e| (e.0, e.1)).collect();
                prop_assert_eq!(t.iter().collect::<Vec<_>>(), want);
                prop_assert_eq!(t.first_eligible(|v| v <= 0).0, model_first(&list, 0));
            }
            prop_assert!(t.is_empty());
        }
    }

    /// The descent visits O(log n) nodes, not the ineligible entities
    /// before the first eligible one: with 4096 queued and only the one
    /// of the latest deadline eligible, a scan in deadline order looks at
    /// 4096; the descent at a few dozen.
    #[test]
    fn the_descent_skips_ineligible_subtrees() {
        let mut t = Timeline::default();
        let n = 4096;
        for id in 0..n {
            // Deadline order = id order; only the last is eligible.
            let v = if id == n - 1 { 0 } else { 100 };
            t.insert(id as i64, id as u64, id, v);
        }
        let (got, visited) = t.first_eligible(|v| v <= 0);
        assert_eq!(got, Some(n - 1));
        assert!(visited < 100, "visited {visited} of {n}");
    }

    /// Equal keys keep the order they were queued in, not their ids'
    /// (`__entity_less` is strict: a new node goes after its equals), in
    /// the vector and in the tree.
    #[test]
    fn equal_keys_keep_the_order_they_were_queued_in() {
        for limits in [(8, 3), (2, 1)] {
            let mut t = Timeline::with_limits(limits.0, limits.1);
            // Entity 9 queued first, then 4, then 7, all at key 5.
            for (ord, id) in [(1, 9), (2, 4), (3, 7)] {
                t.insert(5, ord, id, 0);
            }
            t.insert(1, 4, 2, 0);
            let ids: Vec<usize> = t.iter().map(|(_, id)| id).collect();
            assert_eq!(ids, vec![2, 9, 4, 7], "limits {limits:?}");
            assert!(t.remove(1, 4));
            assert_eq!(t.first(), Some((5, 9)));
            assert_eq!(t.first_eligible(|v| v <= 0).0, Some(9));
        }
    }
}
