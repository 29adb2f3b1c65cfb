//! Keyed per-MR coalescing for `assent serve` (docs/serve.md), as a pure state machine: the
//! caller feeds it events and the time (milliseconds on any monotonic clock it likes) and
//! asks which keys are due; it does no I/O and reads no clock, so every schedule is
//! reproducible in a test.
//!
//! Rules, per key:
//!
//! * a classification starts `settle` after the **latest** event of its key (a burst gives
//!   one classification, and a push's own pipeline exists before anyone looks);
//! * never two classifications of one key at once: a key handed out by [`Coalescer::due`]
//!   is running until [`Coalescer::finished`];
//! * an event during a run schedules **exactly one** more run after it, however many arrive;
//! * at most `max_keys` keys are tracked (pending or running); an event for a new key past
//!   that is refused ([`Full`]) and left to the sweep.

use std::collections::BTreeMap;

/// The state of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyState {
    /// Waiting to run at `due`.
    Pending { due: u64 },
    /// Running; `again` is when the one run queued behind it becomes due, if any.
    Running { again: Option<u64> },
}

/// An event refused: the coalescer already tracks its maximum number of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// What an accepted event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// A new key, due `settle` from now.
    Scheduled,
    /// A pending key's start moved to `settle` from now (coalesced).
    Postponed,
    /// A running key: one more run is queued behind it (or already was).
    QueuedBehindRun,
}

/// The coalescer over keys `K` (e.g. `(project, iid)`).
#[derive(Debug, Clone)]
pub struct Coalescer<K: Ord + Clone> {
    settle_ms: u64,
    max_keys: usize,
    keys: BTreeMap<K, KeyState>,
}

impl<K: Ord + Clone> Coalescer<K> {
    /// A coalescer starting classifications `settle_ms` after a key's latest event, tracking
    /// at most `max_keys` keys.
    pub fn new(settle_ms: u64, max_keys: usize) -> Self {
        Coalescer {
            settle_ms,
            max_keys,
            keys: BTreeMap::new(),
        }
    }

    /// An event for `key` at `now`.
    pub fn event(&mut self, key: K, now: u64) -> Result<Accepted, Full> {
        let due = now.saturating_add(self.settle_ms);
        let full = self.keys.len() >= self.max_keys;
        match self.keys.get_mut(&key) {
            Some(KeyState::Pending { due: d }) => {
                *d = due;
                Ok(Accepted::Postponed)
            }
            Some(KeyState::Running { again }) => {
                *again = Some(due);
                Ok(Accepted::QueuedBehindRun)
            }
            None if full => Err(Full),
            None => {
                self.keys.insert(key, KeyState::Pending { due });
                Ok(Accepted::Scheduled)
            }
        }
    }

    /// The keys due at `now`, in key order; each is running from now on.
    pub fn due(&mut self, now: u64) -> Vec<K> {
        let mut out = Vec::new();
        for (key, state) in &mut self.keys {
            if let KeyState::Pending { due } = *state
                && due <= now
            {
                *state = KeyState::Running { again: None };
                out.push(key.clone());
            }
        }
        out
    }

    /// Starts `key` now if nothing is pending or running for it (the sweep's examination of
    /// an MR takes the same lock); false when the key is busy or the coalescer full.
    pub fn try_begin(&mut self, key: K) -> bool {
        if self.keys.contains_key(&key) || self.keys.len() >= self.max_keys {
            return false;
        }
        self.keys.insert(key, KeyState::Running { again: None });
        true
    }

    /// The run of `key` ended: the key is dropped, or pending again when an event came
    /// during the run.
    pub fn finished(&mut self, key: &K) {
        match self.keys.get(key) {
            Some(KeyState::Running { again: Some(due) }) => {
                let due = *due;
                self.keys.insert(key.clone(), KeyState::Pending { due });
            }
            Some(KeyState::Running { again: None }) => {
                self.keys.remove(key);
            }
            Some(KeyState::Pending { .. }) | None => {}
        }
    }

    /// When the next pending key becomes due, if any is pending.
    pub fn next_due(&self) -> Option<u64> {
        self.keys
            .values()
            .filter_map(|s| match s {
                KeyState::Pending { due } => Some(*due),
                KeyState::Running { .. } => None,
            })
            .min()
    }

    /// Keys tracked, pending or running.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No key tracked.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Keys running now.
    pub fn running(&self) -> usize {
        self.keys
            .values()
            .filter(|s| matches!(s, KeyState::Running { .. }))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_gives_one_run_settle_after_its_last_event() {
        let mut c = Coalescer::new(5_000, 10);
        assert_eq!(c.event(7, 0), Ok(Accepted::Scheduled));
        assert_eq!(c.event(7, 3_000), Ok(Accepted::Postponed));
        assert_eq!(c.event(7, 4_000), Ok(Accepted::Postponed));
        assert!(c.due(8_999).is_empty(), "not before settle after the last");
        assert_eq!(c.next_due(), Some(9_000));
        assert_eq!(c.due(9_000), vec![7]);
        assert!(c.due(20_000).is_empty(), "handed out once");
        c.finished(&7);
        assert!(c.is_empty());
    }

    #[test]
    fn events_during_a_run_queue_exactly_one_more() {
        let mut c = Coalescer::new(1_000, 10);
        c.event(1, 0).unwrap();
        assert_eq!(c.due(1_000), vec![1]);
        for t in [1_100, 1_200, 1_300] {
            assert_eq!(c.event(1, t), Ok(Accepted::QueuedBehindRun));
        }
        assert!(c.due(5_000).is_empty(), "never two runs of one key at once");
        assert_eq!(c.next_due(), None);
        c.finished(&1);
        assert_eq!(c.next_due(), Some(2_300));
        assert_eq!(c.due(5_000), vec![1], "one more, not three");
        c.finished(&1);
        assert!(c.due(10_000).is_empty());
        assert!(c.is_empty());
    }

    #[test]
    fn keys_are_independent_and_bounded() {
        let mut c = Coalescer::new(10, 2);
        c.event("a", 0).unwrap();
        c.event("b", 5).unwrap();
        assert_eq!(c.event("c", 5), Err(Full));
        assert_eq!(
            c.event("a", 6),
            Ok(Accepted::Postponed),
            "a known key is never refused"
        );
        assert_eq!(c.due(15), vec!["b"]);
        assert_eq!((c.len(), c.running()), (2, 1));
        c.finished(&"b");
        assert_eq!(c.event("c", 20), Ok(Accepted::Scheduled));
    }

    #[test]
    fn the_sweep_takes_only_an_idle_key_and_events_queue_behind_it() {
        let mut c = Coalescer::new(10, 5);
        c.event(1, 0).unwrap();
        assert!(!c.try_begin(1), "pending for the live path");
        assert!(c.try_begin(2));
        assert!(!c.try_begin(2), "already running");
        assert_eq!(c.event(2, 3), Ok(Accepted::QueuedBehindRun));
        c.finished(&2);
        assert_eq!(c.due(13), vec![1, 2]);
    }
}
