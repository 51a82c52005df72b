//! The primitive encoding of the metadata section: LEB128 varints
//! (zigzag for signed values), length-prefixed UTF-8 strings, and a reader
//! that checks every read against the end of the data, so that a corrupt or
//! truncated section is an error, never a panic or a huge allocation.

use super::MetaError;

/// Appends primitives to a byte buffer (a technique writes its function
/// records with it, [`crate::technique::Planned::record`]).
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub fn u32(&mut self, v: u32) {
        self.u64(u64::from(v));
    }

    pub fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }

    /// Zigzag: small magnitudes of either sign take one byte.
    pub fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    /// `to - from` for offsets that usually grow, zigzagged.
    pub fn delta(&mut self, from: u64, to: u64) {
        self.i64(to.wrapping_sub(from) as i64);
    }

    /// A count, then indices that usually grow as deltas.
    pub fn ascending(&mut self, indices: impl ExactSizeIterator<Item = usize>) {
        self.usize(indices.len());
        let mut prev = 0;
        for i in indices {
            self.delta(prev, i as u64);
            prev = i as u64;
        }
    }

    pub fn str(&mut self, s: &str) {
        self.usize(s.len());
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// 0 for `None`, else 1 + the length, then the bytes.
    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.usize(s.len() + 1);
                self.buf.extend_from_slice(s.as_bytes());
            }
        }
    }
}

/// Reads primitives, checking bounds (a technique reads its function
/// records with it, [`crate::technique::Profiler::read_record`]).
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// A reader of `data[range]` whose errors give offsets in `data`.
    pub fn span(data: &'a [u8], range: std::ops::Range<usize>) -> Self {
        Reader {
            data: &data[..range.end],
            pos: range.start,
        }
    }

    /// The offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// An error at the current position.
    pub fn corrupt(&self, reason: impl Into<String>) -> MetaError {
        MetaError::Corrupt {
            offset: self.pos,
            reason: reason.into(),
        }
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], MetaError> {
        if n > self.remaining() {
            return Err(self.corrupt("the section ends early"));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, MetaError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u64(&mut self) -> Result<u64, MetaError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.corrupt("a number is too large"));
            }
            v |= bits << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.corrupt("a number is too long"))
    }

    pub fn u32(&mut self) -> Result<u32, MetaError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.corrupt(format!("{v} does not fit 32 bits")))
    }

    pub fn i64(&mut self) -> Result<i64, MetaError> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    pub fn delta(&mut self, from: u64) -> Result<u64, MetaError> {
        Ok(from.wrapping_add(self.i64()? as u64))
    }

    /// A delta-coded offset that must fit 32 bits.
    pub fn delta_u32(&mut self, from: u32) -> Result<u32, MetaError> {
        let v = self.delta(u64::from(from))?;
        u32::try_from(v).map_err(|_| self.corrupt(format!("offset {v} does not fit 32 bits")))
    }

    /// A count of items that take at least `min_bytes` each: never more
    /// than the rest of the section could hold, so a corrupt count cannot
    /// make a reader allocate more than the section's size.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, MetaError> {
        let n = self.u64()?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_bytes.max(1)) <= self.remaining() => Ok(n),
            _ => Err(self.corrupt(format!("a count of {n} is larger than the section"))),
        }
    }

    /// What [`Writer::ascending`] wrote: indices below `bound`, each a
    /// `what` ("chord 7 is not an edge" names a bad one).
    pub fn ascending(
        &mut self,
        bound: usize,
        what: &str,
        of: &str,
    ) -> Result<Vec<usize>, MetaError> {
        let n = self.count(1)?;
        let mut out = Vec::with_capacity(n);
        let mut prev = 0u64;
        for _ in 0..n {
            let i = self.delta(prev)?;
            if i >= bound as u64 {
                return Err(self.corrupt(format!("{what} {i} is not {of}")));
            }
            prev = i;
            out.push(i as usize);
        }
        Ok(out)
    }

    pub fn str(&mut self) -> Result<&'a str, MetaError> {
        let n = self.count(1)?;
        self.utf8(n)
    }

    pub fn opt_str(&mut self) -> Result<Option<&'a str>, MetaError> {
        match self.u64()? {
            0 => Ok(None),
            n => {
                let len = usize::try_from(n - 1).unwrap_or(usize::MAX);
                self.utf8(len).map(Some)
            }
        }
    }

    fn utf8(&mut self, n: usize) -> Result<&'a str, MetaError> {
        let at = self.pos;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| MetaError::Corrupt {
            offset: at,
            reason: "a string is not UTF-8".into(),
        })
    }

    pub fn bool(&mut self) -> Result<bool, MetaError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.corrupt(format!("{b} is not a boolean"))),
        }
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), MetaError> {
        if self.remaining() != 0 {
            return Err(self.corrupt(format!("{} unread bytes at the end", self.remaining())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_numbers_and_strings() {
        let mut w = Writer::default();
        let nums = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        for &n in &nums {
            w.u64(n);
        }
        for n in [0i64, -1, 1, i64::MIN, i64::MAX] {
            w.i64(n);
        }
        w.delta(100, 90);
        w.str("é");
        w.opt_str(None);
        w.opt_str(Some(""));
        let mut r = Reader::new(&w.buf);
        for &n in &nums {
            assert_eq!(r.u64().unwrap(), n);
        }
        for n in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(r.i64().unwrap(), n);
        }
        assert_eq!(r.delta(100).unwrap(), 90);
        assert_eq!(r.str().unwrap(), "é");
        assert_eq!(r.opt_str().unwrap(), None);
        assert_eq!(r.opt_str().unwrap(), Some(""));
        r.finish().unwrap();
    }

    #[test]
    fn refuses_overlong_and_truncated_input() {
        assert!(Reader::new(&[0x80; 11]).u64().is_err());
        assert!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .u64()
                .is_err()
        );
        assert!(Reader::new(&[0x80]).u64().is_err());
        assert!(Reader::new(&[5, b'a']).str().is_err());
        assert!(Reader::new(&[0xff, 0xff, 0x7f]).count(1).is_err());
    }
}
