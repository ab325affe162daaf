//! Network packets (`Packet`).

use super::{check_len, u16_at, u32_at, u64_at, Kind};
use crate::DecodeError;

/// One network packet.
///
/// Encoding (48 bytes, little endian): `src_addr [u8; 16] | dst_addr [u8; 16] |
/// src_port u16 | dst_port u16 | length u32 | timestamp_us u64`.
/// Addresses are IPv6 bytes (IPv4 as IPv4-mapped IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Source address (IPv6 or IPv4-mapped).
    pub src_addr: [u8; 16],
    /// Destination address (IPv6 or IPv4-mapped).
    pub dst_addr: [u8; 16],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Packet length in bytes.
    pub length: u32,
    /// Capture time, µs.
    pub timestamp_us: u64,
}

impl Packet {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 48;

    /// Appends the 48-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.src_addr);
        out.extend_from_slice(&self.dst_addr);
        out.extend_from_slice(&self.src_port.to_le_bytes());
        out.extend_from_slice(&self.dst_port.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<Packet, DecodeError> {
        check_len(Kind::Packet, b)?;
        let mut src_addr = [0u8; 16];
        let mut dst_addr = [0u8; 16];
        src_addr.copy_from_slice(&b[0..16]);
        dst_addr.copy_from_slice(&b[16..32]);
        Ok(Packet {
            src_addr,
            dst_addr,
            src_port: u16_at(b, 32),
            dst_port: u16_at(b, 34),
            length: u32_at(b, 36),
            timestamp_us: u64_at(b, 40),
        })
    }

    /// Index value of an encoded packet: its destination port (0 if `b` is
    /// shorter than a packet).
    pub fn index_value(b: &[u8]) -> u64 {
        // The port sits mid-record, so a cut record would still hold one:
        // check the whole length, as the extractors whose field ends the
        // record do implicitly.
        if b.len() < Self::ENCODED_LEN {
            return 0;
        }
        u64::from(u16_at(b, 34))
    }
}
