//! Error messages with their causes: tonic's, hyper's and reqwest's own messages ("transport
//! error", "error sending request") say nothing without their sources.

/// An error and its sources joined with `: `, skipping a source whose text the message already
/// holds (callers strip URLs first when the error carries one).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Layer {
        text: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    fn layer(text: &'static str, source: Option<Layer>) -> Layer {
        Layer {
            text,
            source: source.map(Box::new),
        }
    }

    #[test]
    fn sources_follow_the_message_once_each() {
        let error = layer(
            "transport error",
            Some(layer(
                "connection refused: os error 111",
                Some(layer("os error 111", None)),
            )),
        );
        assert_eq!(
            error_chain(&error),
            "transport error: connection refused: os error 111"
        );
    }
}
