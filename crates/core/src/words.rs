//! Counts in words: `1 thread`, `2 threads`.

/// `n` and the noun: `one` for exactly one, `many` otherwise.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1, "thread", "threads"), "1 thread");
        assert_eq!(count(0, "thread", "threads"), "0 threads");
        assert_eq!(
            count(2, "dedicated core", "dedicated cores"),
            "2 dedicated cores"
        );
    }
}
