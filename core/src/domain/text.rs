//! Bounded text: user- and cluster-supplied strings cut to a byte budget before they are
//! kept, parsed or logged.

/// `text`'s longest prefix of at most `max_bytes` bytes that ends on a character boundary
/// (all of it when it fits).
pub fn clip(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn cuts_on_a_character_boundary() {
        assert_eq!(clip("abc", 8), "abc");
        assert_eq!(clip("abcdef", 3), "abc");
        // "é" is two bytes: a cut inside it backs off to before it.
        assert_eq!(clip("aéb", 2), "a");
        assert_eq!(clip("aéb", 3), "aé");
        assert_eq!(clip("", 0), "");
    }
}
