//! Wire frames: round trips; corrupted, truncated and oversized input is
//! rejected with a typed error and never panics.

mod common;

use std::io::{BufReader, Read};

use proptest::prelude::*;
use telemetry::wire::{
    decode_frame, encode_frame, FrameReader, FrameWriter, Incoming, DEFAULT_MAX_PAYLOAD,
    FRAME_HEADER_LEN,
};
use telemetry::{Batch, DecodeError, KvOp, KvOpKind, WireError};

/// A stream as a socket delivers it: at most `step` bytes per read, and,
/// at position `fail_at`, one failing read: a timeout, or `Interrupted`
/// (which readers retry) when `interrupt`.
struct Pieces<'a> {
    data: &'a [u8],
    pos: usize,
    step: usize,
    fail_at: usize,
    interrupt: bool,
}

impl<'a> Pieces<'a> {
    /// `data` in pieces of at most `step` bytes, never failing.
    fn new(data: &'a [u8], step: usize) -> Self {
        Pieces {
            data,
            pos: 0,
            step,
            fail_at: usize::MAX,
            interrupt: false,
        }
    }
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.fail_at {
            // Fails once: an interrupted read goes on where it stopped.
            self.fail_at = usize::MAX;
            let kind = if self.interrupt {
                std::io::ErrorKind::Interrupted
            } else {
                std::io::ErrorKind::TimedOut
            };
            return Err(kind.into());
        }
        let end = (self.data.len().min(self.fail_at)).min(self.pos + buf.len().min(self.step));
        let n = end - self.pos;
        buf[..n].copy_from_slice(&self.data[self.pos..end]);
        self.pos = end;
        Ok(n)
    }
}

fn frame(b: &Batch) -> Vec<u8> {
    let mut v = Vec::new();
    encode_frame(b, &mut v).unwrap();
    v
}

proptest! {
    #[test]
    fn frames_round_trip(batches in proptest::collection::vec(common::batch(), 0..5)) {
        let mut stream = Vec::new();
        {
            let mut w = FrameWriter::new(&mut stream);
            for b in &batches {
                w.write_batch(b).unwrap();
            }
        }
        let mut r = FrameReader::new(&stream[..]);
        for b in &batches {
            let got = r.read_batch().unwrap();
            prop_assert_eq!(got.as_ref(), Some(b));
        }
        prop_assert!(r.read_batch().unwrap().is_none());
    }

    #[test]
    fn any_truncation_is_rejected(b in common::batch(), cut in any::<prop::sample::Index>()) {
        let f = frame(&b);
        let n = cut.index(f.len()); // strictly shorter than the frame
        let r = decode_frame(&f[..n], DEFAULT_MAX_PAYLOAD);
        let is_truncated = matches!(r, Err(WireError::Truncated { .. }));
        prop_assert!(is_truncated);
        let mut reader = FrameReader::new(&f[..n]);
        match reader.read_batch() {
            Ok(None) => prop_assert_eq!(n, 0),
            Err(WireError::Truncated { .. }) => prop_assert!(n > 0),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn any_single_bit_flip_is_rejected(b in common::batch(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut f = frame(&b);
        let i = pos.index(f.len());
        f[i] ^= 1 << bit;
        // A bit flip in the length field may also surface as truncation; all
        // that matters is that it is rejected without panicking.
        prop_assert!(decode_frame(&f, DEFAULT_MAX_PAYLOAD).is_err());
    }

    /// `read_frame_into` appends a frame's payload whole, after what the
    /// buffer held, however the bytes arrive (pieces smaller and larger
    /// than the reader's buffer); a frame cut short leaves the buffer as it
    /// was and is `Truncated`.
    #[test]
    fn frames_are_appended_whole_or_not_at_all(
        batches in proptest::collection::vec(common::batch(), 1..4),
        step in 1usize..300,
        capacity in 1usize..512,
        cut in any::<prop::sample::Index>(),
    ) {
        let frames: Vec<Vec<u8>> = batches.iter().map(frame).collect();
        let stream = frames.concat();
        let n = cut.index(stream.len() + 1);
        let pieces = Pieces::new(&stream[..n], step);
        let mut reader = FrameReader::new(BufReader::with_capacity(capacity, pieces));
        let mut out = b"held before".to_vec();
        let mut want = out.clone();
        let mut whole = 0usize;
        for f in &frames {
            let before = out.clone();
            match reader.read_frame_into(&mut out) {
                Ok(Some(Incoming::Data(h))) => {
                    prop_assert_eq!(h.payload_len as usize, f.len() - FRAME_HEADER_LEN);
                    want.extend_from_slice(&f[FRAME_HEADER_LEN..]);
                    prop_assert_eq!(&out, &want);
                    whole += f.len();
                }
                Ok(None) => {
                    prop_assert_eq!(n, whole, "a clean end only at a frame boundary");
                    break;
                }
                Err(WireError::Truncated { .. }) => {
                    prop_assert!(n < whole + f.len());
                    prop_assert_eq!(&out, &before, "a cut frame leaves the buffer as it was");
                    break;
                }
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }

    /// The receivers' inline KV check accepts exactly the encodings the
    /// format allows (24 bytes, op 0 or 1, reserved bytes zero), and the
    /// decoder accepts the same, reading the fields at their offsets.
    #[test]
    fn kv_check_accepts_exactly_the_valid_encodings(
        bytes in proptest::collection::vec(any::<u8>(), 22..27),
        op in 0u8..4,
        reserved in any::<bool>(),
    ) {
        let mut b = bytes;
        if let Some(x) = b.get_mut(4) {
            *x = op;
        }
        if !reserved {
            for x in b.iter_mut().skip(5).take(3) {
                *x = 0;
            }
        }
        let valid = b.len() == 24 && b[4] <= 1 && b[5..8] == [0, 0, 0];
        prop_assert_eq!(KvOp::check(&b).is_ok(), valid);
        match KvOp::decode(&b) {
            Ok(k) => {
                prop_assert!(valid);
                prop_assert_eq!(k.thread_id.to_le_bytes(), [b[0], b[1], b[2], b[3]]);
                prop_assert_eq!(k.op == KvOpKind::Write, b[4] == 1);
                prop_assert_eq!(&k.start_us.to_le_bytes()[..], &b[8..16]);
                prop_assert_eq!(&k.duration_us.to_le_bytes()[..], &b[16..24]);
            }
            Err(e) => {
                prop_assert!(!valid);
                prop_assert_eq!(KvOp::check(&b), Err(e));
            }
        }
    }

    /// A stream that fails in the middle of a payload (a timeout, a reset)
    /// leaves the buffer as it was and says why; interrupted reads are
    /// retried.
    #[test]
    fn an_error_inside_a_payload_leaves_the_buffer_as_it_was(
        b in common::batch(),
        at in any::<prop::sample::Index>(),
        interrupt in any::<bool>(),
    ) {
        let f = frame(&b);
        prop_assume!(f.len() > FRAME_HEADER_LEN);
        // Fails after the header and `at` payload bytes.
        let fail_at = FRAME_HEADER_LEN + at.index(f.len() - FRAME_HEADER_LEN);
        let stream = Pieces { fail_at, interrupt, ..Pieces::new(&f, usize::MAX) };
        let mut reader = FrameReader::new(BufReader::with_capacity(64, stream));
        let mut out = b"held before".to_vec();
        match reader.read_frame_into(&mut out) {
            Ok(Some(Incoming::Data(_))) => {
                // An interruption is retried: the frame arrives whole.
                prop_assert!(interrupt);
                prop_assert_eq!(&out[11..], &f[FRAME_HEADER_LEN..]);
            }
            Err(WireError::Io { .. }) => {
                prop_assert!(!interrupt);
                prop_assert_eq!(&out[..], &b"held before"[..]);
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_frame(&bytes, 1024);
        let mut r = FrameReader::with_max_payload(&bytes[..], 1024);
        while let Ok(Some(_)) = r.read_batch() {}
    }
}

#[test]
fn oversized_payload_is_rejected_before_reading_it() {
    let b = Batch::new(1, vec![]);
    let mut f = frame(&b);
    f[12..16].copy_from_slice(&(u32::MAX).to_le_bytes());
    let mut r = FrameReader::with_max_payload(&f[..], 1 << 20);
    assert!(matches!(
        r.read_batch(),
        Err(WireError::PayloadTooLarge { len, max }) if len == u64::from(u32::MAX) && max == 1 << 20
    ));
}

#[test]
fn bad_magic_version_flags_and_count_are_rejected() {
    let b = Batch::new(5, vec![]);
    let good = frame(&b);
    assert_eq!(decode_frame(&good, 1024).unwrap().0, b);

    let mut f = good.clone();
    f[0] = b'X';
    assert!(matches!(
        decode_frame(&f, 1024),
        Err(WireError::BadMagic { .. })
    ));
    let mut f = good.clone();
    f[4] = 9;
    assert!(matches!(
        decode_frame(&f, 1024),
        Err(WireError::UnsupportedVersion { found: 9, .. })
    ));
    let mut f = good.clone();
    f[6] = 1;
    assert!(matches!(
        decode_frame(&f, 1024),
        Err(WireError::BadFlags(1))
    ));

    // A declared count that does not match the payload, with a valid checksum.
    let mut f = good.clone();
    f[8] = 3;
    let crc = crc32c_of(&f);
    f[24..28].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        decode_frame(&f, 1024),
        Err(WireError::Payload(DecodeError::CountTooLarge {
            declared: 3,
            ..
        }))
    ));
}

fn crc32c_of(frame: &[u8]) -> u32 {
    // Same definition as the crate docs: CRC32C of header bytes 0..24 then the payload.
    let mut v = frame[0..24].to_vec();
    v.extend_from_slice(&frame[28..]);
    crc32c::crc32c(&v)
}

#[test]
fn garbage_after_valid_frames_fails_only_at_the_garbage() {
    let b = Batch::new(1, vec![]);
    let mut s = frame(&b);
    s.extend_from_slice(b"GET / HTTP/1.1\r\nHost: example\r\nAccept: */*\r\n\r\n");
    let mut r = FrameReader::new(&s[..]);
    assert_eq!(r.read_batch().unwrap(), Some(b));
    let err = r.read_batch().unwrap_err();
    assert!(matches!(err, WireError::BadMagic { .. }), "{err}");
    assert!(err.to_string().contains("magic"));
}

proptest! {
    /// Reading payloads in wire form gives exactly the encoded records of
    /// each frame, back to back, and the same verdict as decoding.
    #[test]
    fn payloads_read_in_wire_form_equal_the_encoded_batches(
        batches in proptest::collection::vec(common::batch(), 0..5),
        flip in any::<Option<(prop::sample::Index, u8)>>(),
    ) {
        let mut stream = Vec::new();
        for b in &batches {
            stream.extend_from_slice(&frame(b));
        }
        if let Some((pos, bit)) = flip {
            if !stream.is_empty() {
                let i = pos.index(stream.len());
                stream[i] ^= 1 << (bit % 8);
            }
        }
        let mut decoded = FrameReader::new(&stream[..]);
        let mut raw = FrameReader::new(&stream[..]);
        let mut out = vec![0xAB];
        loop {
            let want = decoded.read_batch();
            let before = out.clone();
            let got = raw.read_payload_into(&mut out);
            match (want, got) {
                (Ok(Some(b)), Ok(Some(h))) => {
                    let mut p = before.clone();
                    b.encode_payload_into(&mut p);
                    prop_assert_eq!(&out, &p);
                    prop_assert_eq!(h.record_count as usize, b.records.len());
                    prop_assert_eq!(h.arrival_us, b.arrival_us);
                }
                (Ok(None), Ok(None)) => break,
                (Err(_), Err(_)) => {
                    prop_assert_eq!(&out, &before);
                    break;
                }
                (w, g) => prop_assert!(false, "decode {:?} vs wire form {:?}", w.map(|b| b.map(|b| b.records.len())), g),
            }
        }
    }
}

#[test]
fn a_pre_encoded_payload_frames_like_its_batch() {
    let b = Batch::new(
        77,
        vec![telemetry::Record::Syscall(telemetry::Syscall {
            pid: 1,
            tid: 2,
            nr: 17,
            start_us: 3,
            duration_us: 4,
        })],
    );
    let mut payload = Vec::new();
    b.encode_payload_into(&mut payload);
    let mut f = Vec::new();
    telemetry::wire::encode_frame_payload(1, 77, &payload, &mut f).unwrap();
    assert_eq!(f, frame(&b));
}

#[test]
fn a_buffered_frame_is_seen_only_when_complete() {
    let b = Batch::new(5, vec![]);
    let mut two = frame(&b);
    two.extend_from_slice(&frame(&b));
    let mut r = FrameReader::new(std::io::BufReader::new(&two[..]));
    assert!(
        !r.has_buffered_frame(),
        "nothing is buffered before the first read"
    );
    let mut out = Vec::new();
    assert!(r.read_payload_into(&mut out).unwrap().is_some());
    assert!(r.has_buffered_frame());
    let cut = &two[..two.len() - 1];
    let mut r = FrameReader::new(std::io::BufReader::new(cut));
    assert!(r.read_payload_into(&mut out).unwrap().is_some());
    assert!(!r.has_buffered_frame(), "a cut frame is not whole");
}

/// Version 2: a HELLO, a SERIES and two data frames read back in order,
/// with their sequence numbers and series reference; a version-1 frame
/// read by the same reader in between; every bit flip is refused.
#[test]
fn version_2_frames_round_trip_beside_version_1() {
    use telemetry::wire::{
        encode_control, encode_data_v2, FrameType, Hello, Incoming, SeriesTags, FRAME_HEADER_LEN_V2,
    };
    let hello = Hello {
        sender_id: 42,
        flags: telemetry::wire::control::HELLO_WALL_CLOCK,
        next_seq: 1,
        token: "t".into(),
        host: "h".into(),
        agent: "test".into(),
    };
    let series = SeriesTags::new(3, &[("comm", "postgres")]).unwrap();
    let b = Batch::new(
        9,
        vec![telemetry::Record::RunQueue(telemetry::RunQueue {
            pid: 1,
            tid: 2,
            cpu: 0,
            start_us: 5,
            latency_us: 6,
        })],
    );
    let mut payload = Vec::new();
    b.encode_payload_into(&mut payload);
    let mut s = Vec::new();
    encode_control(FrameType::Hello, 0, 1, &hello.encode().unwrap(), &mut s).unwrap();
    encode_control(FrameType::Series, 0, 1, &series.encode(), &mut s).unwrap();
    encode_data_v2(1, 3, 1, 9, &payload, &mut s).unwrap();
    let v2_end = s.len();
    encode_frame(&b, &mut s).unwrap();
    encode_data_v2(2, 0, 1, 9, &payload, &mut s).unwrap();

    let mut r = FrameReader::new(&s[..]);
    let mut out = Vec::new();
    let Some(Incoming::Control(h, p)) = r.read_frame_into(&mut out).unwrap() else {
        panic!("HELLO expected")
    };
    assert_eq!(h.frame_type, FrameType::Hello);
    assert_eq!(Hello::decode(&p).unwrap(), hello);
    let Some(Incoming::Control(h, p)) = r.read_frame_into(&mut out).unwrap() else {
        panic!("SERIES expected")
    };
    assert_eq!(h.frame_type, FrameType::Series);
    assert_eq!(SeriesTags::decode(&p).unwrap(), series);
    let Some(Incoming::Data(h)) = r.read_frame_into(&mut out).unwrap() else {
        panic!("data expected")
    };
    assert_eq!(
        (h.version, h.seq, h.series_ref, h.record_count),
        (2, 1, 3, 1)
    );
    assert_eq!(out, payload);
    let Some(Incoming::Data(h)) = r.read_frame_into(&mut out).unwrap() else {
        panic!("v1 data expected")
    };
    assert_eq!((h.version, h.seq, h.series_ref), (1, 0, 0));
    let got = r.read_batch().unwrap().unwrap();
    assert_eq!(got, b);
    assert!(r.read_batch().unwrap().is_none());

    // Every single-bit flip of the version-2 frames is refused or changes
    // nothing that is read back (there is no such bit: the CRC covers all).
    let data_start = v2_end - (FRAME_HEADER_LEN_V2 + payload.len());
    for pos in data_start..v2_end {
        for bit in 0..8 {
            let mut c = s[data_start..v2_end].to_vec();
            c[pos - data_start] ^= 1 << bit;
            let mut r = FrameReader::new(&c[..]);
            assert!(
                r.read_frame_into(&mut Vec::new()).is_err(),
                "byte {pos} bit {bit}"
            );
        }
    }
}
