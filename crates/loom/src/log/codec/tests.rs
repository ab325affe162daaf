//! Round trips and bad bodies of the chunk codec.

use super::*;
use crate::log::record::encode;
use proptest::prelude::*;

fn payload(recs: &[(u64, Vec<u8>)]) -> (Vec<u8>, u64) {
    let first = recs.first().map_or(0, |r| r.0);
    let mut out = vec![0u8; recs.iter().map(|r| r.1.len() + 20).sum()];
    let (mut n, mut prev) = (0, first);
    for (t, b) in recs {
        n += encode(&mut out[n..], t - prev, b);
        prev = *t;
    }
    out.truncate(n);
    (out, first)
}

fn round_trip(recs: &[(u64, Vec<u8>)]) -> (Codec, usize) {
    let (p, first) = payload(recs);
    let mut enc = Encoder::new(Some(3));
    let mut body = Vec::new();
    let codec = enc.encode(&p, first, recs.len() as u32, &mut body);
    let back = decode(codec, &body, p.len(), recs.len() as u32);
    assert_eq!(back.as_deref(), Ok(&p[..]), "{codec:?}");
    (codec, body.len())
}

/// `rebuild` into a new vector, with fresh scratch.
fn rebuilt(cols: &[u8], payload_len: usize, count: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    rebuild(
        cols,
        payload_len,
        count,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    )?;
    Ok(out)
}

/// `decode_into` appends after what the buffer holds (the chunk header's
/// room) and leaves it alone; after a large chunk has grown this thread's
/// buffers, a smaller chunk's declared size is still the limit.
#[test]
fn decode_into_appends_and_keeps_each_chunks_limit() {
    let big: Vec<(u64, Vec<u8>)> = (0..3000)
        .map(|i| (i * 7, (i as u32).to_le_bytes().repeat(6)))
        .collect();
    let small: Vec<(u64, Vec<u8>)> = big[..40].to_vec();
    let mut enc = Encoder::new(Some(1));
    for recs in [&big, &small, &big] {
        let (p, first) = payload(recs);
        let n = recs.len() as u32;
        let mut body = Vec::new();
        let codec = enc.encode(&p, first, n, &mut body);
        assert_eq!(codec, Codec::Columns);
        let mut out = vec![0xAB; 48];
        decode_into(codec, &body, p.len(), n, &mut out).unwrap();
        assert_eq!(&out[..48], &[0xAB; 48][..]);
        assert_eq!(&out[48..], &p[..]);
        // The same body declared one byte shorter does not fit.
        let mut out = vec![0xAB; 48];
        assert!(decode_into(codec, &body, p.len() - 1, n, &mut out).is_err());
        let zbody = zstd::bulk::compress(&p, 1).unwrap();
        let mut out = vec![1; 3];
        decode_into(Codec::Zstd, &zbody, p.len(), n, &mut out).unwrap();
        assert_eq!(&out[3..], &p[..]);
        let mut out = vec![1; 3];
        assert!(decode_into(Codec::Zstd, &zbody, p.len() - 1, n, &mut out).is_err());
        assert_eq!(out, vec![1; 3]);
    }
}

#[test]
fn regular_telemetry_compresses_and_round_trips() {
    let recs: Vec<(u64, Vec<u8>)> = (0..2000u64)
        .map(|i| {
            let mut b = Vec::new();
            b.extend_from_slice(&(1000 + (i % 4) as u32).to_le_bytes());
            b.extend_from_slice(&[0, 0, 0, 0]);
            b.extend_from_slice(&(1_700_000_000_000_000 + i * 3).to_le_bytes());
            b.extend_from_slice(&(i * 7919 % 200).to_le_bytes());
            (1_700_000_000_000_000 + i * 3 + i % 2, b)
        })
        .collect();
    let (codec, size) = round_trip(&recs);
    assert_eq!(codec, Codec::Columns);
    assert!(size < 2000 * 3, "{size} bytes for 2000 records");
}

/// Records of different lengths whose times need wider planes than
/// their varints (small steps and one jump of years: every delta of
/// delta then takes 7 bytes) have columns larger than the payload; the
/// chunk is then zstd over the payload, not stored raw.
#[test]
fn wide_columns_fall_back_to_zstd_over_the_payload() {
    let mut t = 1_000u64;
    let recs: Vec<(u64, Vec<u8>)> = (0..500u64)
        .map(|i| {
            t += if i == 250 { 1 << 50 } else { 1 + i % 3 };
            let name = format!("service-a GET /api/v1/items/{} status=200 ", i % 7);
            (t, name.repeat(4 + (i % 5) as usize).into_bytes())
        })
        .collect();
    let (codec, size) = round_trip(&recs);
    assert_eq!(codec, Codec::Zstd);
    let (p, _) = payload(&recs);
    assert!(
        size * 4 < p.len(),
        "{size} bytes for a payload of {}",
        p.len()
    );
}

/// The 32-bit lane helpers give the values the 64-bit ones gave (the
/// bytes a store holds do not depend on which computed them).
#[test]
fn lane_helpers_match_the_64_bit_ones() {
    let edges = [
        0u32,
        1,
        2,
        0x7f,
        0x80,
        0xff,
        0x100,
        0xffff,
        0x1_0000,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_fffe,
        u32::MAX,
    ];
    let mut x = 0x9e37_79b9u32;
    let randoms = (0..10_000).map(|_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    });
    for v in edges.into_iter().chain(randoms) {
        assert_eq!(
            u64::from(zigzag32(v)),
            zigzag(i64::from(v as i32)),
            "zigzag {v:#x}"
        );
        assert_eq!(
            width32(v),
            u64::from(width_of(u64::from(v))),
            "width {v:#x}"
        );
    }
}

#[test]
fn odd_shapes_round_trip() {
    round_trip(&[(5, vec![])]);
    round_trip(&[(5, vec![1, 2, 3])]);
    round_trip(
        &(0..300)
            .map(|i| (7, vec![9u8; 13 + i % 3]))
            .collect::<Vec<_>>(),
    );
    round_trip(
        &(0..300)
            .map(|i| (i * 1_000_000_007, vec![0xff; 5]))
            .collect::<Vec<_>>(),
    );
    round_trip(
        &(0..300)
            .map(|i| (u64::MAX - 300 + i, vec![]))
            .collect::<Vec<_>>(),
    );
}

#[test]
fn garbage_bodies_are_errors_not_panics() {
    let recs: Vec<(u64, Vec<u8>)> = (0..50).map(|i| (i, vec![i as u8; 9])).collect();
    let (p, first) = payload(&recs);
    let mut body = Vec::new();
    let codec = Encoder::new(Some(1)).encode(&p, first, 50, &mut body);
    assert_eq!(codec, Codec::Columns);
    for i in 0..body.len() {
        let mut b = body.clone();
        b[i] ^= 0x41;
        if let Ok(out) = decode(codec, &b, p.len(), 50) {
            assert_eq!(out.len(), p.len());
        }
    }
    assert!(decode(codec, &body, p.len() - 1, 50).is_err());
    assert!(decode(codec, &body, p.len(), 51).is_err());
}

/// A lane pattern of the property test: how one 4-byte lane of a record
/// varies from record to record.
#[derive(Debug, Clone, Copy)]
enum Pattern {
    Constant(u32),
    Counter {
        start: u32,
        step: u32,
    },
    Small(u32),
    Random,
    /// Smooth with rare jumps (a time's low half wrapping, a new thread).
    Jumps,
}

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        any::<u32>().prop_map(Pattern::Constant),
        (any::<u32>(), 0u32..1000).prop_map(|(start, step)| Pattern::Counter { start, step }),
        (1u32..70_000).prop_map(Pattern::Small),
        Just(Pattern::Random),
        Just(Pattern::Jumps),
    ]
}

/// Records built from lane patterns (plus `len % 4` random tail bytes),
/// with some records of other lengths when `ragged`.
fn patterned(
    n: usize,
    len: usize,
    lanes: &[Pattern],
    ragged: bool,
    seed: u64,
    step: u64,
) -> Vec<(u64, Vec<u8>)> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = next() % (1 << 50);
    (0..n)
        .map(|i| {
            t += next() % (step + 1);
            let mut b = Vec::with_capacity(len);
            for k in 0..len / 4 {
                let w = match lanes[k % lanes.len()] {
                    Pattern::Constant(c) => c,
                    Pattern::Counter { start, step } => {
                        start.wrapping_add(step.wrapping_mul(i as u32))
                    }
                    Pattern::Small(m) => (next() % u64::from(m)) as u32,
                    Pattern::Random => next() as u32,
                    Pattern::Jumps => {
                        (i as u32).wrapping_mul(3)
                            ^ if next() % 50 == 0 { next() as u32 } else { 0 }
                    }
                };
                b.extend_from_slice(&w.to_le_bytes());
            }
            b.extend((0..len % 4).map(|_| next() as u8));
            if ragged && next() % 7 == 0 {
                b.truncate((next() as usize) % (len + 1));
            }
            (t, b)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The one-pass encoder round-trips every shape exactly, and decodes to
    /// the same payload as the reference encoder's output; on lanes short
    /// enough to be judged whole (no sampling) its columns are the
    /// reference's byte for byte.
    #[test]
    fn one_pass_encoder_round_trips(
        n in 1usize..700,
        len in 0usize..80,
        lanes in proptest::collection::vec(pattern(), 1..6),
        ragged in any::<bool>(),
        seed in any::<u64>(),
        step in prop_oneof![Just(0u64), Just(3), Just(1000), Just(1 << 40)],
    ) {
        let recs = patterned(n, len, &lanes, ragged, seed, step);
        let (p, first) = payload(&recs);
        let count = recs.len() as u32;
        let mut enc = Encoder::new(Some(1));
        let mut body = Vec::new();
        let codec = enc.encode(&p, first, count, &mut body);
        let back = decode(codec, &body, p.len(), count);
        prop_assert_eq!(back.as_deref(), Ok(&p[..]));

        let mut old = reference::ReferenceEncoder::new(Some(1));
        let cols = enc.columns_only(&p, first, count).map(<[u8]>::to_vec);
        let old_cols = old.columns_only(&p, first, count).map(<[u8]>::to_vec);
        prop_assert_eq!(cols.is_some(), old_cols.is_some());
        if let (Some(c), Some(o)) = (&cols, &old_cols) {
            let back = rebuilt(c, p.len(), count);
            prop_assert_eq!(back.as_deref(), Ok(&p[..]));
            let back = rebuilt(o, p.len(), count);
            prop_assert_eq!(back.as_deref(), Ok(&p[..]));
            if n <= 128 {
                prop_assert_eq!(c, o);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// An encoder reused across chunks of any shapes writes the same bytes
    /// as a fresh one for each: nothing left from an earlier chunk (its
    /// buffers are sized, not cleared) reaches a later one's output.
    #[test]
    fn a_reused_encoder_writes_what_a_fresh_one_does(
        shapes in proptest::collection::vec(
            (1usize..700, 0usize..80, proptest::collection::vec(pattern(), 1..4), any::<bool>(), any::<u64>()),
            2..6,
        ),
    ) {
        let mut reused = Encoder::new(Some(1));
        for (n, len, lanes, ragged, seed) in shapes {
            let recs = patterned(n, len, &lanes, ragged, seed, 3);
            let (p, first) = payload(&recs);
            let count = recs.len() as u32;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ca = reused.encode(&p, first, count, &mut a);
            let cb = Encoder::new(Some(1)).encode(&p, first, count, &mut b);
            prop_assert_eq!(ca, cb);
            prop_assert_eq!(a, b);
        }
    }
}

/// The sample's choice costs little: on regular telemetry lanes the
/// columns are no larger than the reference's whole-lane choice.
#[test]
fn sampled_lane_choice_matches_whole_lane_on_telemetry() {
    let lanes = [
        Pattern::Counter { start: 7, step: 3 },
        Pattern::Constant(0x1_0000),
        Pattern::Small(300),
        Pattern::Constant(42),
    ];
    let recs = patterned(3000, 24, &lanes, false, 9, 5);
    let (p, first) = payload(&recs);
    let new = Encoder::new(Some(1))
        .columns_only(&p, first, 3000)
        .map(<[u8]>::to_vec);
    let old = reference::ReferenceEncoder::new(Some(1))
        .columns_only(&p, first, 3000)
        .map(<[u8]>::to_vec);
    assert_eq!(new, old);
}
