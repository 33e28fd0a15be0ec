//! Numbers as a person reads them in the pages.

/// `digits` (an unsigned integer's decimal digits) with thousands separated by commas:
/// "2000" → "2,000". Used for counts ("101–200 of 2,000") and the integer part of amounts
/// ("$21,133.50").
pub fn thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands("0"), "0");
        assert_eq!(thousands("999"), "999");
        assert_eq!(thousands("2000"), "2,000");
        assert_eq!(thousands("1234567"), "1,234,567");
    }
}
