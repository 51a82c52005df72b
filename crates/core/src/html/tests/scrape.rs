//! Reading the report's HTML back, for the tests of the pages: this
//! crate's unit tests (`html/tests.rs`) and the CLI's integration tests of
//! `pathprof html` (crates/cli/tests/html_report.rs includes this file with
//! `#[path]`).

/// The values of attribute `attr` of the elements whose start tag holds
/// `marker`, in document order.
pub fn attrs(html: &str, marker: &str, attr: &str) -> Vec<String> {
    html.split('<')
        .filter(|tag| tag.contains(marker))
        .filter_map(|tag| {
            let at = tag.find(&format!(" {attr}=\""))? + attr.len() + 3;
            Some(tag[at..].split('"').next()?.to_string())
        })
        .collect()
}
