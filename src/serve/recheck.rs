//! The MRs serve re-examines without an event (docs/serve.md#recheck): GitLab sends no
//! webhook when a thread is resolved while another stays open (resolving is an `update_all`
//! in `app/models/concerns/resolvable_note.rb`; only the last resolution runs
//! `MergeRequests::ResolvedDiscussionNotificationService`, which sends a Merge Request Hook),
//! so an MR whose summary was left at `REVIEW` is watched and re-examined every
//! `--recheck-interval`, for at most `--recheck-for` after its last event.
//!
//! This is the pure part: the watched set, fed the time (milliseconds on any monotonic clock)
//! by the caller. It is bounded: past `max` MRs, the one whose last event is oldest drops out
//! (and is counted), left to the embedded sweep.

use std::collections::BTreeMap;

/// The watched MRs over keys `K` (`(project, iid)` in serve).
#[derive(Debug, Clone)]
pub struct Watchlist<K: Ord + Clone> {
    max: usize,
    watch_for_ms: u64,
    /// Each watched key and the time of its last event.
    last_event: BTreeMap<K, u64>,
    dropped: u64,
}

impl<K: Ord + Clone> Watchlist<K> {
    /// An empty set of at most `max` MRs, each watched for `watch_for_ms` after its last event.
    pub fn new(max: usize, watch_for_ms: u64) -> Self {
        Watchlist {
            max,
            watch_for_ms,
            last_event: BTreeMap::new(),
            dropped: 0,
        }
    }

    /// A classification of `key` (whose last event was at `last_event`) left its summary at
    /// `REVIEW`: it is watched from now on (a watched key keeps its latest event time). When
    /// the set is full, the key with the oldest last event drops out first.
    pub fn watch(&mut self, key: K, last_event: u64) {
        if self.max == 0 {
            self.dropped += 1;
            return;
        }
        if let Some(at) = self.last_event.get_mut(&key) {
            *at = (*at).max(last_event);
            return;
        }
        while self.last_event.len() >= self.max {
            let Some(oldest) = self
                .last_event
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.last_event.remove(&oldest);
            self.dropped += 1;
        }
        self.last_event.insert(key, last_event);
    }

    /// A classification of `key` found its summary no longer at `REVIEW` (or the MR closed):
    /// it is no longer watched.
    pub fn unwatch(&mut self, key: &K) {
        self.last_event.remove(key);
    }

    /// A new event for `key` at `now`: a watched key is watched `watch_for` from now.
    pub fn event(&mut self, key: &K, now: u64) {
        if let Some(at) = self.last_event.get_mut(key) {
            *at = (*at).max(now);
        }
    }

    /// The keys to re-examine at `now`, in key order, after dropping those whose last event
    /// is more than `watch_for` ago (those are expired, not counted as dropped).
    pub fn due(&mut self, now: u64) -> Vec<K> {
        let watch_for = self.watch_for_ms;
        self.last_event
            .retain(|_, at| now.saturating_sub(*at) <= watch_for);
        self.last_event.keys().cloned().collect()
    }

    /// The time of `key`'s last event, while it is watched.
    pub fn last_event(&self, key: &K) -> Option<u64> {
        self.last_event.get(key).copied()
    }

    /// MRs watched now.
    pub fn len(&self) -> usize {
        self.last_event.len()
    }

    /// No MR watched.
    pub fn is_empty(&self) -> bool {
        self.last_event.is_empty()
    }

    /// MRs dropped because the set was full, since start.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_drops_the_mr_whose_last_event_is_oldest_and_counts_it() {
        let mut w = Watchlist::new(2, 1_000);
        w.watch(1, 10);
        w.watch(2, 5);
        w.watch(1, 20);
        assert_eq!(w.dropped(), 0);
        w.watch(3, 30);
        assert_eq!(w.due(30), vec![1, 3], "2 had the oldest last event");
        assert_eq!(w.dropped(), 1);
        assert_eq!(w.last_event(&1), Some(20));
    }

    #[test]
    fn watching_ends_past_watch_for_or_when_the_summary_leaves_review() {
        let mut w = Watchlist::new(10, 100);
        w.watch("a", 0);
        w.watch("b", 50);
        assert_eq!(w.due(100), vec!["a", "b"]);
        assert_eq!(w.due(101), vec!["b"], "a expired, 101 ms after its event");
        w.event(&"b", 120);
        assert_eq!(w.due(200), vec!["b"], "an event renews the watch");
        w.unwatch(&"b");
        assert!(w.due(200).is_empty());
        assert_eq!(w.dropped(), 0, "expiry is not a drop");
        w.event(&"c", 300);
        assert!(w.is_empty(), "an event alone does not watch an MR");
    }
}
