//! Kubernetes resource quantities (`resource.Quantity`) as the API server writes them: a
//! signed decimal number and a suffix, binary (`Ki` `Mi` `Gi` `Ti` `Pi` `Ei`), decimal (`n`
//! `u` `m` none `k` `M` `G` `T` `P` `E`) or a decimal exponent (`e3`, `E-2`)
//! (Kubernetes: "Quantity", k8s.io/apimachinery/pkg/api/resource). `"100m"` CPU is 0.1
//! core; `"64Gi"` memory is 68,719,476,736 bytes.
//!
//! Input is bounded ([`MAX_LEN`] characters, exponents to ±[`MAX_EXPONENT`]); anything else
//! is `None`, never a panic or an overflow.

use rust_decimal::Decimal;

/// The longest quantity read, in characters (the API server's own are far shorter).
pub const MAX_LEN: usize = 64;
/// The largest decimal exponent read (`E` alone is 10^18).
pub const MAX_EXPONENT: u32 = 18;

/// The quantity's value in base units (cores, bytes, devices); `None` when `q` is not a
/// quantity, is longer than [`MAX_LEN`], or does not fit.
pub fn parse(q: &str) -> Option<Decimal> {
    let q = q.trim();
    if q.is_empty() || q.len() > MAX_LEN || !q.is_ascii() {
        return None;
    }
    // The number ends at the first character that cannot be part of one.
    let end = q
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || ((c == '+' || c == '-') && i == 0)))
        .map_or(q.len(), |(i, _)| i);
    let (number, suffix) = q.split_at(end);
    let number: Decimal = number.parse().ok()?;
    let ten = |e: i64| -> Option<Decimal> {
        let abs = u32::try_from(e.unsigned_abs())
            .ok()
            .filter(|a| *a <= MAX_EXPONENT)?;
        let p = Decimal::from(10u64.pow(abs));
        Some(if e < 0 { Decimal::ONE / p } else { p })
    };
    let two = |p: u32| Decimal::from(1u64 << p);
    let factor = match suffix {
        "" => Decimal::ONE,
        "Ki" => two(10),
        "Mi" => two(20),
        "Gi" => two(30),
        "Ti" => two(40),
        "Pi" => two(50),
        "Ei" => two(60),
        "n" => ten(-9)?,
        "u" => ten(-6)?,
        "m" => ten(-3)?,
        "k" => ten(3)?,
        "M" => ten(6)?,
        "G" => ten(9)?,
        "T" => ten(12)?,
        "P" => ten(15)?,
        "E" => ten(18)?,
        s if s.starts_with(['e', 'E']) => ten(s[1..].parse::<i64>().ok()?)?,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// CPU in millicores, rounded up (the API server rounds a CPU quantity up to 1m); `None`
/// when it is not a non-negative quantity.
pub fn millicores(q: &str) -> Option<u64> {
    whole(parse(q)? * Decimal::from(1000))
}

/// Memory (or any byte count) in bytes, rounded up; `None` when it is not a non-negative
/// quantity.
pub fn bytes(q: &str) -> Option<u64> {
    whole(parse(q)?)
}

fn whole(d: Decimal) -> Option<u64> {
    if d.is_sign_negative() && !d.is_zero() {
        return None;
    }
    u64::try_from(d.ceil()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of Kubernetes' "Resource Management for Pods and Containers": these all
    /// are about the same memory, and 0.5 CPU is 500m.
    #[test]
    fn the_documentations_examples() {
        for q in ["128974848", "129e6", "129M", "128974848000m", "123Mi"] {
            let b = bytes(q).unwrap();
            assert!((128_000_000..=129_000_000).contains(&b), "{q}: {b}");
        }
        assert_eq!(bytes("123Mi"), Some(123 * 1024 * 1024));
        assert_eq!(millicores("0.5"), Some(500));
        assert_eq!(millicores("100m"), Some(100));
        assert_eq!(millicores("7910m"), Some(7910));
        assert_eq!(millicores("24"), Some(24_000));
        assert_eq!(bytes("96Gi"), Some(96 << 30));
        assert_eq!(bytes("1Ei"), Some(1 << 60));
        assert_eq!(bytes("2E"), Some(2_000_000_000_000_000_000));
        assert_eq!(millicores("1E-3"), Some(1));
        assert_eq!(
            millicores("250u"),
            Some(1),
            "rounded up to 1m, as the API server does"
        );
    }

    /// Bad input is `None`: a wrong suffix, a fraction of a byte is a whole byte, a negative
    /// amount, a huge exponent, text, an overlong string.
    #[test]
    fn what_is_not_a_quantity_is_none() {
        for q in [
            "", "Gi", "12 Gi", "12GB", "1.2.3", "--1", "e5", "1e99", "1e", "ten", "1Ei0",
        ] {
            assert_eq!(parse(q), None, "{q:?}");
        }
        assert_eq!(bytes("-1"), None);
        assert_eq!(bytes("0.5"), Some(1));
        assert_eq!(bytes(&"9".repeat(MAX_LEN + 1)), None);
        assert_eq!(bytes("100Ei"), None, "more than a u64 of bytes");
        assert_eq!(parse("1٣"), None, "non-ASCII digits");
    }
}
