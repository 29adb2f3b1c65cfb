//! A discussions page too large to buffer, read as it arrives.
//!
//! One discussion can exceed any body limit on its own: GitLab caps a note at 1,000,000
//! characters but not the replies of a thread, so a commenter can make a single discussion
//! of many maximal notes (68 of them pass 64 MiB). The listing must still complete: a
//! human's notes never stop a run. Such a page is decoded straight from the connection with
//! a streaming `serde_json` deserializer, one note at a time, and the body of every note the
//! bot did not write is dropped as soon as the note is complete: assent reads no human's
//! words (the inventory filters on the author before it parses a body), only who wrote a
//! note and who resolved it.
//!
//! Memory stays bounded without a bound on the page:
//!
//! * the bodies kept (the bot's) may total at most the transport's body limit, as a buffered
//!   page may; past it the page is [`StreamFailure::TooLarge`], the listing's error;
//! * one note (everything between the start of a note and the next) may take at most
//!   [`MAX_NOTE_WIRE_BYTES`] on the wire (counted at the socket, so give or take the read
//!   buffer's 8 KiB), so no single value is buffered past that. GitLab's largest note fits it
//!   at its widest escaping;
//! * everything else (unknown fields, positions) is skipped without being buffered.
//!
//! The whole page is read in one request, so the request timeout bounds its time. Its
//! completeness is proven as any page's: by the next-page headers, never by a count.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufReader, Read};

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::transport::StreamFailure;
use super::wire::{ApiDiscussion, ApiNote};

/// The most bytes one note may take on the wire in a streamed page (16 MiB): GitLab's
/// 1,000,000-character note at its widest JSON form (a character outside the Basic
/// Multilingual Plane escaped as two `\uXXXX`, 12 bytes) with room for its other fields.
pub(crate) const MAX_NOTE_WIRE_BYTES: u64 = 16 * 1024 * 1024;

/// What the reader and the decoder share while a page arrives.
struct Meter {
    /// Bytes read since the current note (or discussion) began.
    since_item: Cell<u64>,
    /// Bytes of bot note bodies kept so far.
    kept: Cell<u64>,
    /// Bound on `kept`.
    kept_limit: u64,
    /// A bound was passed: the page is too large, whatever error the decoder reports.
    over: Cell<bool>,
}

impl Meter {
    fn start_item(&self) {
        self.since_item.set(0);
    }
}

/// The connection's reader, counting bytes against the current note's bound.
struct Metered<'r> {
    inner: &'r mut dyn Read,
    meter: &'r Meter,
}

impl Read for Metered<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let since = self.meter.since_item.get().saturating_add(n as u64);
        self.meter.since_item.set(since);
        if since > MAX_NOTE_WIRE_BYTES {
            self.meter.over.set(true);
            return Err(io::Error::other(format!(
                "one note takes more than {MAX_NOTE_WIRE_BYTES} bytes"
            )));
        }
        Ok(n)
    }
}

/// Decodes a discussions page from `reader` keeping only `bot`'s note bodies, at most
/// `kept_limit` bytes of them. `Ok(Err(_))`: the body is not a list of discussions (the
/// listing's "not the expected list").
pub(crate) fn read_page(
    reader: &mut dyn Read,
    bot: u64,
    kept_limit: u64,
) -> Result<Result<Vec<ApiDiscussion>, String>, StreamFailure> {
    let meter = Meter {
        since_item: Cell::new(0),
        kept: Cell::new(0),
        kept_limit,
        over: Cell::new(false),
    };
    let metered = Metered {
        inner: reader,
        meter: &meter,
    };
    // `serde_json`'s reader input reads byte by byte: buffered, the socket sees large reads.
    let mut deserializer = serde_json::Deserializer::from_reader(BufReader::new(metered));
    let decoded = PageSeed { bot, meter: &meter }
        .deserialize(&mut deserializer)
        .and_then(|page| deserializer.end().map(|()| page));
    match decoded {
        Ok(page) => Ok(Ok(page)),
        Err(_) if meter.over.get() => Err(StreamFailure::TooLarge),
        Err(e) if e.is_io() => Err(StreamFailure::Io(e.into())),
        Err(e) => Ok(Err(e.to_string())),
    }
}

#[derive(Clone, Copy)]
struct PageSeed<'m> {
    bot: u64,
    meter: &'m Meter,
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = Vec<ApiDiscussion>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = Vec<ApiDiscussion>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of discussions")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut page = Vec::new();
        while let Some(discussion) = seq.next_element_seed(DiscussionSeed(self))? {
            page.push(discussion);
        }
        Ok(page)
    }
}

struct DiscussionSeed<'m>(PageSeed<'m>);

impl<'de> DeserializeSeed<'de> for DiscussionSeed<'_> {
    type Value = ApiDiscussion;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.meter.start_item();
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DiscussionSeed<'_> {
    type Value = ApiDiscussion;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a discussion")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut id: Option<String> = None;
        let mut individual_note: Option<bool> = None;
        let mut notes: Option<Vec<ApiNote>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" if id.is_none() => id = Some(map.next_value()?),
                "individual_note" if individual_note.is_none() => {
                    individual_note = map.next_value()?;
                }
                "notes" if notes.is_none() => notes = map.next_value_seed(NotesSeed(self.0))?,
                "id" | "individual_note" | "notes" => {
                    return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ApiDiscussion {
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            individual_note,
            notes,
        })
    }
}

/// `notes`: `null` or a list.
struct NotesSeed<'m>(PageSeed<'m>);

impl<'de> DeserializeSeed<'de> for NotesSeed<'_> {
    type Value = Option<Vec<ApiNote>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for NotesSeed<'_> {
    type Value = Option<Vec<ApiNote>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of notes or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut notes = Vec::new();
        while let Some(note) = seq.next_element_seed(NoteSeed(self.0))? {
            notes.push(note);
        }
        Ok(Some(notes))
    }
}

/// One note: decoded whole (its body is buffered up to the per-note bound, because GitLab
/// sends `body` before `author`), then kept with its body only when the bot wrote it.
struct NoteSeed<'m>(PageSeed<'m>);

impl<'de> DeserializeSeed<'de> for NoteSeed<'_> {
    type Value = ApiNote;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let PageSeed { bot, meter } = self.0;
        meter.start_item();
        let mut note = ApiNote::deserialize(d)?;
        if note.author.as_ref().map(|a| a.id) == Some(bot) {
            let body = note.body.as_ref().map_or(0, |b| b.len() as u64);
            let kept = meter.kept.get().saturating_add(body);
            meter.kept.set(kept);
            if kept > meter.kept_limit {
                meter.over.set(true);
                return Err(de::Error::custom(format_args!(
                    "the bot's notes take more than {} bytes",
                    meter.kept_limit
                )));
            }
        } else {
            note.body = None;
        }
        Ok(note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(id: u64, author: u64, body: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id, "type": "DiscussionNote", "body": body,
            "author": {"id": author, "username": format!("u{author}")},
            "system": false, "resolvable": true, "resolved": false,
            "position": {"base_sha": "a", "new_line": 3},
        })
    }

    fn page(discussions: &[serde_json::Value]) -> Vec<u8> {
        serde_json::to_vec(discussions).unwrap()
    }

    #[test]
    fn human_bodies_are_dropped_and_the_bots_kept() {
        let bytes = page(&[serde_json::json!({
            "id": "d1", "individual_note": false, "extra": [1, {"a": "b"}],
            "notes": [note(1, 9, "bot body"), note(2, 5, &"h".repeat(100_000)), note(3, 9, "reply")],
        })]);
        let decoded = read_page(&mut &bytes[..], 9, 1_000).unwrap().unwrap();
        assert_eq!(decoded.len(), 1);
        assert_eq!(decoded[0].id, "d1");
        let notes = decoded[0].notes.as_ref().unwrap();
        let bodies: Vec<Option<&str>> = notes.iter().map(|n| n.body.as_deref()).collect();
        assert_eq!(bodies, vec![Some("bot body"), None, Some("reply")]);
        assert_eq!(notes[1].author.as_ref().map(|a| a.id), Some(5));
    }

    #[test]
    fn the_bots_bodies_are_bounded_and_one_note_is_bounded() {
        let bytes = page(&[serde_json::json!({
            "id": "d1", "notes": [note(1, 9, &"b".repeat(600)), note(2, 9, &"b".repeat(600))],
        })]);
        assert!(matches!(
            read_page(&mut &bytes[..], 9, 1_000),
            Err(StreamFailure::TooLarge)
        ));
        assert!(read_page(&mut &bytes[..], 9, 1_200).unwrap().is_ok());

        // The count runs behind the reader's buffer (8 KiB) at most.
        let huge = "h".repeat(MAX_NOTE_WIRE_BYTES as usize + 16 * 1024);
        let bytes = page(&[serde_json::json!({"id": "d1", "notes": [note(1, 5, &huge)]})]);
        assert!(matches!(
            read_page(&mut &bytes[..], 9, 1_000),
            Err(StreamFailure::TooLarge)
        ));
    }

    #[test]
    fn a_body_that_is_not_a_list_of_discussions_says_so() {
        for bytes in [
            &b"{\"message\":\"x\"}"[..],
            b"[{\"notes\":[]}]",
            b"[{\"id\":\"a\",\"id\":\"b\"}]",
            b"[] []",
        ] {
            assert!(
                matches!(read_page(&mut &bytes[..], 9, 1_000), Ok(Err(_))),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
        let null_notes = br#"[{"id":"a","notes":null}]"#;
        let decoded = read_page(&mut &null_notes[..], 9, 1_000).unwrap().unwrap();
        assert!(decoded[0].notes.is_none());
    }

    #[test]
    fn a_connection_lost_mid_page_is_an_io_failure() {
        let bytes = page(&[serde_json::json!({"id": "d1", "notes": [note(1, 9, "x")]})]);
        struct Broken<'a>(&'a [u8]);
        impl Read for Broken<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() {
                    return Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"));
                }
                let n = buf.len().min(self.0.len()).min(7);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut broken = Broken(&bytes[..bytes.len() / 2]);
        assert!(matches!(
            read_page(&mut broken, 9, 1_000),
            Err(StreamFailure::Io(_))
        ));
    }
}
