//! Store URLs shown to people: a URL with its password hidden, for every message that
//! names the store it could not open.

/// What replaces a hidden password.
const HIDDEN: &str = "***";

/// `url` with every part that could be a password replaced by `***`, by hand and on the
/// side of hiding too much: the user information of a URL (everything between the first
/// `:` after `scheme://` and the *last* `@`, whatever it holds, since URL parsers differ on
/// where a password holding `/`, `?`, `#` or `@` ends), and the value of every `password=`
/// or `pass=` parameter (a query's, up to `&` or `#`; a key/value string's, quoted or up to
/// a space). A driver that parses its URL first ([`redact_with`]) hides what its parser
/// reads as the password too.
#[must_use]
pub fn hide_password(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(start) = shown.find("://").map(|at| at + 3)
        && let Some(at) = shown[start..].rfind('@').map(|at| start + at)
        && let Some(colon) = shown[start..at].find(':').map(|colon| start + colon)
    {
        shown.replace_range(colon + 1..at, HIDDEN);
    }
    for key in ["password", "pass"] {
        hide_parameter(&mut shown, key);
    }
    shown
}

/// `url` as [`hide_password`] shows it, after `parse` read it: `None` if it does not
/// parse (then only its scheme is shown, never the rest), else with the password `parse`
/// found (its decoded text, if any) hidden wherever it still appears.
#[must_use]
pub fn redact_with(url: &str, parse: impl FnOnce(&str) -> Option<Option<String>>) -> String {
    let Some(password) = parse(url) else {
        return unparsable(url);
    };
    let mut shown = hide_password(url);
    if let Some(password) = password.filter(|password| !password.is_empty()) {
        shown = shown.replace(&password, HIDDEN);
    }
    shown
}

/// What is shown of a URL its store could not parse: its scheme alone.
#[must_use]
pub fn unparsable(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            format!("{scheme}://(unparsable URL, not shown)")
        }
        _ => "(unparsable connection string, not shown)".to_owned(),
    }
}

/// Hides the value of every `key=` parameter in `shown` (`key` starting the text or after
/// `?`, `&`, `;` or white space, and spaces around `=` allowed as in a PostgreSQL key/value
/// string).
fn hide_parameter(shown: &mut String, key: &str) {
    let mut from = 0;
    while let Some(found) = shown[from..].find(key).map(|at| from + at) {
        let after_key = found + key.len();
        let starts = found == 0
            || shown[..found]
                .chars()
                .next_back()
                .is_some_and(|c| matches!(c, '?' | '&' | ';') || c.is_whitespace());
        let rest = &shown[after_key..];
        let trimmed = rest.trim_start();
        if !starts || !trimmed.starts_with('=') {
            from = after_key;
            continue;
        }
        let eq = after_key + (rest.len() - trimmed.len());
        let value_rest = shown[eq + 1..].trim_start();
        let value = shown.len() - value_rest.len();
        let end = if let Some(quoted) = value_rest.strip_prefix('\'') {
            // A quoted key/value: up to the closing quote that no backslash escapes.
            let mut escaped = false;
            quoted
                .char_indices()
                .find(|&(_, c)| {
                    let closes = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })
                .map_or(shown.len(), |(at, _)| value + 1 + at + 1)
        } else {
            value_rest
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .map_or(shown.len(), |end| value + end)
        };
        shown.replace_range(value..end, HIDDEN);
        from = value + HIDDEN.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_hidden_wherever_a_parser_could_read_one() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
            (
                "postgres://mcp:pa:ss@h/db?x=1",
                "postgres://mcp:***@h/db?x=1",
            ),
            (
                "postgresql://user:s3c?ret@host/db",
                "postgresql://user:***@host/db",
            ),
            ("postgres://u:a/b#c@h/db", "postgres://u:***@h/db"),
            ("postgres://u:p@ss@h/db", "postgres://u:***@h/db"),
            ("postgres://mcp@h/db", "postgres://mcp@h/db"),
            (
                "postgres://h/db?user=u&password=pw&x=1",
                "postgres://h/db?user=u&password=***&x=1",
            ),
            (
                "host=h password=pw dbname=d",
                "host=h password=*** dbname=d",
            ),
            (
                "host=h password = pw dbname=d",
                "host=h password = *** dbname=d",
            ),
            (
                "host=h password='p w\\'x' dbname=d",
                "host=h password=*** dbname=d",
            ),
            (
                "redis+unix:///tmp/r.sock?pass=pw&db=1",
                "redis+unix:///tmp/r.sock?pass=***&db=1",
            ),
            ("host=h passfile=/x dbname=d", "host=h passfile=/x dbname=d"),
        ] {
            assert_eq!(hide_password(url), shown, "{url}");
        }
    }

    #[test]
    fn an_unparsable_url_shows_its_scheme_alone() {
        assert_eq!(
            redact_with("postgres://u:s3cret@h:x/db", |_| None),
            "postgres://(unparsable URL, not shown)"
        );
        assert_eq!(
            redact_with("host=h password=s3cret oops", |_| None),
            "(unparsable connection string, not shown)"
        );
        assert_eq!(
            redact_with("postgres://h/db?options=s3cret", |_| Some(Some(
                "s3cret".into()
            ))),
            "postgres://h/db?options=***"
        );
    }
}
