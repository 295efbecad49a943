//! The builtin embedder: a deterministic hashed bag of stemmed content words and their
//! bigrams (the S6 tokens), signed-hashed into a fixed number of dimensions and scaled to
//! unit length. Two restatements of a fact that share most content words land close
//! together; it knows nothing of synonyms. No network, no model file, same vector on every
//! machine.

use crate::text::measures;

/// Weight of a bigram relative to a single word.
const BIGRAM_WEIGHT: f32 = 0.5;

pub struct Builtin {
    dim: usize,
}

impl Builtin {
    pub fn new(dim: usize) -> Builtin {
        Builtin { dim: dim.max(8) }
    }

    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let toks = measures::content_token_seq(text);
        let mut add = |feature: &str, weight: f32| {
            let h = fnv1a(feature.as_bytes());
            let idx = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            v[idx] += sign * weight;
        };
        for t in &toks {
            add(t, 1.0);
        }
        for pair in toks.windows(2) {
            add(&format!("{} {}", pair[0], pair[1]), BIGRAM_WEIGHT);
        }
        normalize(&mut v);
        v
    }
}

impl Builtin {
    /// Names the embedder and its size; vectors are cached under this id.
    pub fn id(&self) -> String {
        format!("builtin-v1-{}", self.dim)
    }
}

/// Scale a vector to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// FNV-1a, 64 bit: a stable hash that never changes between Rust versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn restatements_are_close_and_unrelated_text_is_far() {
        let e = Builtin::new(256);
        let a = e.vector("I live in Lisbon and work best in the morning.");
        let b = e.vector("User lives in Lisbon and works best in the morning.");
        let c = e.vector("The build failed because the linker ran out of memory.");
        assert!(cos(&a, &b) > 0.85, "{}", cos(&a, &b));
        assert!(cos(&a, &c) < 0.3, "{}", cos(&a, &c));
        assert_eq!(e.vector("same text"), e.vector("same text"));
        assert!(e.vector("the and of").iter().all(|x| *x == 0.0));
    }
}
