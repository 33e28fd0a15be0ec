//! Stored objects' JSON compressed with a zstd dictionary trained on their own kind.
//!
//! Why: at 10k nodes and 50k pods the objects' JSON was 162 MB of the embedded cluster's
//! 276 MB of live heap (heaptrack, 2026-11-24). Objects of one kind share nearly all their keys
//! and many of their values, which a per-object compressor cannot see but a dictionary can:
//! measured on the scale benchmark's Nodes and Pods, zstd alone makes them 38–47 % of their size,
//! zstd with a 16 KiB dictionary trained on 2,000 of them 9 %. The price is a decompression on
//! every read (lists, watch events, gets), about a gigabyte a second.
//!
//! A kind's objects are kept as they are until it has [`TRAIN_AT`] of them; a dictionary is
//! then trained from those, once, and every later write of the kind is compressed with it.
//! Objects written before keep their plain JSON until they are next written.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use zstd::bulk::{Compressor, Decompressor};

/// Objects a kind must have before its dictionary is trained from them. Below that, the
/// kind's JSON takes a few megabytes at most and zstd's trainer has too little to learn from.
pub const TRAIN_AT: usize = 1_000;
/// Dictionary size, bytes: zstd's trainer wants about a hundred times as much sample, which
/// [`TRAIN_AT`] objects of a kilobyte or more give.
const DICTIONARY_BYTES: usize = 16 * 1024;
/// zstd's default level: a 2 KB object compresses in microseconds with a loaded dictionary.
const LEVEL: i32 = 3;

/// A dictionary trained on one kind's objects, and the compressor that uses it.
pub struct Dictionary {
    raw: Vec<u8>,
    /// Writes of a kind happen under that kind's write lock, so this is never contended.
    compressor: Mutex<Compressor<'static>>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dictionary({} bytes)", self.raw.len())
    }
}

impl Dictionary {
    /// Trains a dictionary on `samples` (each one object's JSON). Errors: zstd's message when
    /// the samples are too few or too alike to train from.
    pub fn train<S: AsRef<[u8]>>(samples: &[S]) -> std::io::Result<Arc<Self>> {
        let raw = zstd::dict::from_samples(samples, DICTIONARY_BYTES)?;
        let compressor = Compressor::with_dictionary(LEVEL, &raw)?;
        Ok(Arc::new(Self {
            raw,
            compressor: Mutex::new(compressor),
        }))
    }

    /// `json` compressed with this dictionary; `None` if zstd fails (then it is kept plain).
    fn compress(&self, json: &[u8]) -> Option<Box<[u8]>> {
        let mut c = self
            .compressor
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        c.compress(json).ok().map(Vec::into_boxed_slice)
    }
}

/// One object's JSON, as it is or compressed.
#[derive(Debug)]
pub enum Packed {
    Plain(Bytes),
    Zstd {
        data: Box<[u8]>,
        /// Length of the JSON, bytes.
        len: u32,
        dictionary: Arc<Dictionary>,
    },
}

impl Packed {
    /// Packs `json` with `dictionary` when there is one (and the JSON is under 4 GiB).
    pub fn new(mut json: Vec<u8>, dictionary: Option<&Arc<Dictionary>>) -> Self {
        let packed = dictionary.and_then(|d| {
            let len = u32::try_from(json.len()).ok()?;
            let data = d.compress(&json)?;
            Some(Self::Zstd {
                data,
                len,
                dictionary: d.clone(),
            })
        });
        packed.unwrap_or_else(|| {
            // The serializer doubles its buffer as it goes; kept as is, the spare half of every
            // plain object stays allocated for as long as the object is stored (a third of the
            // embedded cluster's heap at 50k pods, before compression).
            json.shrink_to_fit();
            Self::Plain(Bytes::from(json))
        })
    }

    /// Length of the JSON, bytes.
    pub fn len(&self) -> usize {
        match self {
            Self::Plain(b) => b.len(),
            Self::Zstd { len, .. } => *len as usize,
        }
    }

    /// Appends the JSON to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Self::Plain(b) => out.extend_from_slice(b),
            Self::Zstd {
                data,
                len,
                dictionary,
            } => with_decompressor(dictionary, |d| {
                let start = out.len();
                out.reserve(*len as usize);
                let mut tail = std::io::Cursor::new(&mut *out);
                tail.set_position(start as u64);
                d.decompress_to_buffer(data, &mut tail)
                    .expect("stored objects decompress with their own dictionary");
            }),
        }
    }

    /// The JSON (a copy when compressed).
    pub fn bytes(&self) -> Bytes {
        match self {
            Self::Plain(b) => b.clone(),
            Self::Zstd { .. } => {
                let mut out = Vec::new();
                self.write_to(&mut out);
                Bytes::from(out)
            }
        }
    }

    #[cfg(test)]
    pub fn is_compressed(&self) -> bool {
        matches!(self, Self::Zstd { .. })
    }
}

thread_local! {
    /// One decompressor per dictionary per thread: making one allocates zstd's context and
    /// loads the dictionary, too slow to do for each of a list's 50k items.
    static DECOMPRESSORS: RefCell<Vec<(Arc<Dictionary>, Decompressor<'static>)>> =
        const { RefCell::new(Vec::new()) };
}

fn with_decompressor(dictionary: &Arc<Dictionary>, f: impl FnOnce(&mut Decompressor<'static>)) {
    DECOMPRESSORS.with_borrow_mut(|all| {
        let i = match all.iter().position(|(d, _)| Arc::ptr_eq(d, dictionary)) {
            Some(i) => i,
            None => {
                let d = Decompressor::with_dictionary(&dictionary.raw)
                    .expect("zstd loads a dictionary it trained");
                all.push((dictionary.clone(), d));
                all.len() - 1
            }
        };
        f(&mut all[i].1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(i: usize) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("train-{i}"), "namespace": "ml", "uid": format!("uid-{i:08}"),
                         "labels": {"app": "train", "index": i.to_string()}},
            "spec": {"nodeName": format!("g{}", i % 97), "containers": [{"name": "main", "image": "trainer:1",
                     "resources": {"requests": {"cpu": "8", "nvidia.com/gpu": "1"}}}]},
            "status": {"phase": if i.is_multiple_of(3) { "Pending" } else { "Running" }}
        }))
        .unwrap()
    }

    #[test]
    fn compressed_json_reads_back_as_it_was_and_is_smaller() {
        let samples: Vec<Vec<u8>> = (0..TRAIN_AT).map(pod).collect();
        let d = Dictionary::train(&samples).unwrap();
        let (mut plain, mut packed) = (0, 0);
        for i in [3, 500, 5_000, 123_456] {
            let json = pod(i);
            let p = Packed::new(json.clone(), Some(&d));
            assert!(p.is_compressed());
            assert_eq!(p.len(), json.len());
            assert_eq!(p.bytes(), json);
            let mut out = b"prefix,".to_vec();
            p.write_to(&mut out);
            assert_eq!(&out[..7], b"prefix,", "write_to appends");
            assert_eq!(&out[7..], &json[..]);
            plain += json.len();
            if let Packed::Zstd { data, .. } = &p {
                packed += data.len();
            }
        }
        assert!(packed * 4 < plain, "{packed} of {plain} bytes");
    }

    #[test]
    fn without_a_dictionary_json_is_kept_as_is() {
        let p = Packed::new(pod(1), None);
        assert!(!p.is_compressed());
        assert_eq!(p.bytes(), pod(1));
    }

    #[test]
    fn too_little_to_learn_from_is_an_error() {
        assert!(Dictionary::train(&[b"{}".to_vec(), b"{}".to_vec()]).is_err());
    }

    #[test]
    fn decompressors_follow_their_dictionary() {
        let a = Dictionary::train(&(0..TRAIN_AT).map(pod).collect::<Vec<_>>()).unwrap();
        let b = Dictionary::train(&(TRAIN_AT..2 * TRAIN_AT).map(pod).collect::<Vec<_>>()).unwrap();
        let (pa, pb) = (Packed::new(pod(7), Some(&a)), Packed::new(pod(8), Some(&b)));
        for _ in 0..2 {
            assert_eq!(pa.bytes(), pod(7));
            assert_eq!(pb.bytes(), pod(8));
        }
    }
}
