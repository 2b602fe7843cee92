//! How an error reaches the terminal: its message, then each cause that adds something. Many
//! errors quote their cause in their own message (`{what}: {source}`) *and* expose it as their
//! source, so printing the whole chain (`{:#}`) repeated a spec problem three times; a cause whose
//! text the message already holds is left out here, so every problem is printed once.

/// The text of `error` and the causes its message does not already quote, joined by `: `.
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.contains(part.as_str()) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    #[error("{what}: {source}")]
    struct Quoting {
        what: String,
        source: std::io::Error,
    }

    #[test]
    fn a_quoted_cause_is_printed_once() {
        let inner = std::io::Error::other("line 3: unknown field `top_pp`");
        let e = anyhow::Error::new(Quoting {
            what: "spec a.yaml".into(),
            source: inner,
        })
        .context("init");
        assert_eq!(
            error_text(&e),
            "init: spec a.yaml: line 3: unknown field `top_pp`"
        );
    }

    #[test]
    fn a_cause_not_quoted_is_kept() {
        let e = anyhow::Error::new(std::io::Error::other("connection refused"))
            .context("cannot reach http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(
            error_text(&e),
            "cannot reach http://127.0.0.1:9/v1/chat/completions: connection refused"
        );
    }
}
