//! Round trips and bad bodies of the chunk codec.

use super::*;
use crate::log::record::encode;

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
