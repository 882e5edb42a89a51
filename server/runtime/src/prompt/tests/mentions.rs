//! `$name` mentions in free text.

use crate::prompt::mentioned_skills;

fn mentions(input: &str) -> Vec<String> {
    let known = ["pdf", "csv-export", "v2.1", "a"];
    mentioned_skills(input, |name| known.contains(&name))
}

#[test]
fn mentions_are_found_in_free_text() {
    assert_eq!(mentions("use $pdf"), ["pdf"]);
    assert_eq!(mentions("$pdf: read it"), ["pdf"]);
    assert_eq!(
        mentions("(see $pdf) and \"$csv-export\""),
        ["pdf", "csv-export"]
    );
    assert_eq!(
        mentions("first $csv-export, then $pdf."),
        ["csv-export", "pdf"]
    );
    assert_eq!(mentions("try $v2.1."), ["v2.1"]);
    assert_eq!(mentions("end with $pdf..."), ["pdf"]);
    assert_eq!(
        mentions("é$pdf"),
        ["pdf"],
        "a non-ASCII letter before `$` still separates"
    );
    assert_eq!(mentions("$a"), ["a"]);
}

#[test]
fn each_skill_once_in_order_of_first_mention() {
    assert_eq!(
        mentions("$pdf $csv-export $pdf $csv-export"),
        ["pdf", "csv-export"]
    );
}

#[test]
fn unknown_names_and_lookalikes_are_ignored() {
    assert!(mentions("$HOME and $PDF").is_empty(), "names are lowercase");
    assert!(
        mentions("it costs US$5 or 10$pdf").is_empty(),
        "glued to a word"
    );
    assert!(mentions("literally \\$pdf").is_empty(), "escaped");
    assert!(mentions("$pdfs, $pd, $ pdf, $, $$").is_empty());
    assert!(mentions("").is_empty());
}
