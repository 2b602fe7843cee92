//! A port of CPython's Mersenne Twister (`random.Random`): seeding from a big integer with
//! `init_by_array`, `getrandbits`, `_randbelow` and `shuffle`, bit for bit, so our selection equals
//! the reference runner's (METHODOLOGY §7).

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// CPython's MT19937 generator state.
#[derive(Clone)]
pub struct Mt19937 {
    mt: [u32; N],
    index: usize,
}

impl Mt19937 {
    /// `init_genrand(s)`: the single-word seeding CPython uses inside `init_by_array`.
    fn init_genrand(seed: u32) -> Mt19937 {
        let mut mt = [0u32; N];
        mt[0] = seed;
        for i in 1..N {
            let prev = mt[i - 1];
            mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, index: N }
    }

    /// `init_by_array(key)`: seeds from 32-bit words, least significant word first.
    pub fn from_key(key: &[u32]) -> Mt19937 {
        let key: &[u32] = if key.is_empty() { &[0] } else { key };
        let mut state = Mt19937::init_genrand(19_650_218);
        let mt = &mut state.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1];
            mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1];
            mt[i] =
                (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        state
    }

    /// `random.Random(n)` for the non-negative integer whose big-endian bytes are given: the
    /// integer is split into 32-bit words, least significant first, with high zero words dropped
    /// (at least one word).
    pub fn from_be_bytes(bytes: &[u8]) -> Mt19937 {
        Mt19937::from_key(&be_bytes_to_words(bytes))
    }

    /// `random.Random(n)` for a `u64` seed.
    pub fn from_u64(seed: u64) -> Mt19937 {
        Mt19937::from_be_bytes(&seed.to_be_bytes())
    }

    /// `genrand_uint32`: the next tempered 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    fn twist(&mut self) {
        let mt = &mut self.mt;
        for kk in 0..N {
            let y = (mt[kk] & UPPER_MASK) | (mt[(kk + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            mt[kk] = mt[(kk + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// `getrandbits(k)` for `k` ≤ 64: 32-bit words filled least significant first, the last one
    /// keeping its top bits.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        let k = k.min(64);
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `_randbelow(n)` by rejection: `k = n.bit_length()`, draw `getrandbits(k)` until below `n`.
    /// Returns 0 for `n == 0` without drawing (CPython would raise; we never call it so).
    pub fn randbelow(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `random.shuffle(x)`: for i from len−1 down to 1, swap x[i] with x[_randbelow(i + 1)].
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.randbelow(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Big-endian bytes of a non-negative integer → its 32-bit words, least significant first, high
/// zero words dropped, at least one word (CPython's `random_seed` key).
pub fn be_bytes_to_words(bytes: &[u8]) -> Vec<u32> {
    let mut words: Vec<u32> = bytes
        .rchunks(4)
        .map(|chunk| chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)))
        .collect();
    while words.len() > 1 && words.last() == Some(&0) {
        words.pop();
    }
    if words.is_empty() {
        words.push(0);
    }
    words
}

/// The decimal string of the non-negative integer with these big-endian bytes.
pub fn be_bytes_to_decimal(bytes: &[u8]) -> String {
    // Repeated division by 10^9 over base-2^32 limbs, most significant first.
    let mut limbs: Vec<u32> = be_bytes_to_words(bytes).into_iter().rev().collect();
    let mut chunks: Vec<u32> = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u64 = 0;
        for limb in limbs.iter_mut() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while limbs.len() > 1 && limbs[0] == 0 {
            limbs.remove(0);
        }
    }
    let mut out = match chunks.pop() {
        Some(top) => top.to_string(),
        None => return String::from("0"),
    };
    for chunk in chunks.iter().rev() {
        out.push_str(&format!("{chunk:09}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from CPython 3.11.7 on this machine:
    //   import random
    //   for s in [0, 1, 12345, 2**32, 2**100+7]:
    //       r = random.Random(s)
    //       print(s, [r.getrandbits(32) for _ in range(3)],
    //             random.Random(s).getrandbits(40), random.Random(s).getrandbits(64))
    fn seed_of(n: u128) -> Mt19937 {
        Mt19937::from_be_bytes(&n.to_be_bytes())
    }

    #[test]
    fn getrandbits_matches_cpython() {
        let cases: [(u128, [u32; 3], u64, u64); 5] = [
            (
                0,
                [3626764237, 1654615998, 3255389356],
                424533559245,
                7106521602475165645,
            ),
            (
                1,
                [577090037, 2444712010, 3639700191],
                623347347957,
                10499958131665514997,
            ),
            (
                12345,
                [1789368711, 3146859322, 43676229],
                804948253063,
                13515657874892102023,
            ),
            (
                1 << 32,
                [485306839, 1508871100, 1794561286],
                382737396183,
                6480552028864852439,
            ),
            (
                (1 << 100) + 7,
                [1786885132, 353954449, 1403444918],
                91981198348,
                1520222784515585036,
            ),
        ];
        for (seed, words, bits40, bits64) in cases {
            let mut r = seed_of(seed);
            let got: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
            assert_eq!(got, words, "seed {seed}");
            assert_eq!(seed_of(seed).getrandbits(40), bits40, "seed {seed}");
            assert_eq!(seed_of(seed).getrandbits(64), bits64, "seed {seed}");
        }
        assert_eq!(Mt19937::from_u64(12345).next_u32(), 1789368711);
    }

    #[test]
    fn randbelow_and_shuffle_match_cpython() {
        // r = random.Random(12345); [r._randbelow(n) for n in [1,2,3,7,10,100,1000]]
        let mut r = Mt19937::from_u64(12345);
        let got: Vec<u64> = [1, 2, 3, 7, 10, 100, 1000]
            .iter()
            .map(|&n| r.randbelow(n))
            .collect();
        assert_eq!(got, vec![0, 0, 1, 6, 5, 24, 276]);
        // ids = [f"id-{i:03d}" for i in range(10)]; random.Random(12345).shuffle(ids)
        let mut ids: Vec<String> = (0..10).map(|i| format!("id-{i:03}")).collect();
        Mt19937::from_u64(12345).shuffle(&mut ids);
        let want = [8, 7, 3, 5, 1, 2, 9, 4, 0, 6].map(|i| format!("id-{i:03}"));
        assert_eq!(ids, want);
    }

    #[test]
    fn leading_zero_words_are_dropped() {
        // b = bytes(8) + bytes(range(1, 25)); s = int.from_bytes(b, "big")
        // print(s, random.Random(s).getrandbits(32))
        let mut bytes = vec![0u8; 8];
        bytes.extend(1u8..=24);
        assert_eq!(be_bytes_to_words(&bytes).len(), 6);
        assert_eq!(Mt19937::from_be_bytes(&bytes).next_u32(), 1364021630);
        assert_eq!(
            be_bytes_to_decimal(&bytes),
            "24712618904405848143667237098672243022256101403810731800"
        );
        assert_eq!(be_bytes_to_decimal(&[0, 0]), "0");
        assert_eq!(be_bytes_to_decimal(&[0x01, 0x00]), "256");
        assert_eq!(be_bytes_to_words(&[]), vec![0]);
    }
}
