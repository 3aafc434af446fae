use super::*;

#[test]
fn accents_are_removed_and_the_accented_form_kept_for_queries() {
    assert_eq!(lexeme("Régimen").as_deref(), Some("regimen"));
    assert_eq!(lexeme("también").as_deref(), Some("tambien"));
    assert_eq!(lexeme("naïve"), lexeme("naive"));
    assert_eq!(accented_lexeme("régimen").as_deref(), Some("régimen"));
    assert_eq!(accented_lexeme("regimen"), None);
    assert_eq!(accented_lexeme("日本語"), None);
    assert_eq!(lexeme("日本語").as_deref(), Some("日本語"));
    assert!(tsvector("el régimen").contains("'regimen':2"));
}

#[test]
fn lexemes_are_stemmed_lower_case_without_stop_words() {
    assert_eq!(lexeme("Migrations").as_deref(), Some("migrat"));
    assert_eq!(lexeme("migration").as_deref(), Some("migrat"));
    assert_eq!(lexeme("running").as_deref(), Some("run"));
    assert_eq!(lexeme("The"), None);
    assert_eq!(lexeme("Über").as_deref(), Some("uber"));
}

#[test]
fn binary_form_holds_the_same_lexemes() {
    let b = tsvector_binary("fix the fix, flaky");
    // 2 lexemes: "fix" at 1 and 3, "flaki" at 4.
    let mut want = vec![0, 0, 0, 2];
    want.extend_from_slice(b"fix\0");
    want.extend_from_slice(&[0, 2, 0, 1, 0, 3]);
    want.extend_from_slice(b"flaki\0");
    want.extend_from_slice(&[0, 1, 0, 4]);
    assert_eq!(b, want);
    assert_eq!(tsvector_binary("the"), vec![0, 0, 0, 0]);
}

/// The lexemes and positions of a text the plain way: [`words`], [`lexeme`], a sorted map.
fn reference(text: &str) -> Vec<(String, Vec<u16>)> {
    let mut m: std::collections::BTreeMap<String, Vec<u16>> = Default::default();
    for (pos, w) in words(text) {
        if let Some(l) = lexeme(w) {
            let ps = m.entry(l).or_default();
            let p = pos.min(MAX_POSITION) as u16;
            if ps.last() != Some(&p) && ps.len() < MAX_POSITIONS {
                ps.push(p);
            }
        }
    }
    m.into_iter().collect()
}

/// [`tsvector_binary`] read back.
fn decoded(b: &[u8]) -> Vec<(String, Vec<u16>)> {
    let n = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..n {
        let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
        let l = String::from_utf8(b[at..end].to_vec()).unwrap();
        at = end + 1;
        let k = u16::from_be_bytes([b[at], b[at + 1]]) as usize;
        at += 2;
        let ps = (0..k)
            .map(|i| u16::from_be_bytes([b[at + 2 * i], b[at + 2 * i + 1]]))
            .collect();
        at += 2 * k;
        out.push((l, ps));
    }
    assert_eq!(at, b.len(), "exact size");
    out
}

#[test]
fn fast_paths_give_the_plain_way_lexemes() {
    let long = "word ".repeat(300) + &"x1 ".repeat(17_000) + "tail";
    let texts = [
        "Fix the flaky test; fix it.",
        "error[E0308]: mismatched types at src/main.rs:42:7 (exit code 127)",
        "Running migrations: 0001_core.sql 0002 0002 0002 done in 12ms",
        "abcdefgh abcdefghij abcdefghijklmnopqrstu abcdefghijklmnopqrstuv abcdefg ABCDEFGH",
        "Règlement déjà vu: naïve café, 幫我修正 device 的權限, abc修正, 권한 수정",
        "deadbeefdeadbeefdeadbeef0123 deadbeefdeadbeefdeadbeef0123 Deadbeefdeadbeefdeadbeef0123",
        "internationalization Internationalization INTERNATIONALIZATIONS",
        "",
        "the a of",
        &long,
    ];
    // Twice over: the second pass reads every word from the cache.
    for _ in 0..2 {
        for t in texts {
            assert_eq!(decoded(&tsvector_binary(t)), reference(t), "{t:.60}");
        }
    }
    assert_eq!(STOP_WORDS.split_whitespace().count(), 127);
    let lit = tsvector("b2 a1 a1 abcdefghij abcdefghi");
    assert_eq!(lit, "'a1':2,3 'abcdefghi':5 'abcdefghij':4 'b2':1");
}

#[test]
fn tsvector_literal_keeps_positions_with_stop_word_gaps() {
    assert_eq!(
        tsvector("Fix the flaky test; fix it."),
        "'fix':1,5 'flaki':3 'test':4"
    );
    assert_eq!(tsvector("the a of"), "");
    assert_eq!(tsvector("foo.bar-baz"), "'bar':2 'baz':3 'foo':1");
}

#[test]
fn cjk_characters_are_words_of_their_own() {
    let w: Vec<&str> = words("幫我修正 device 的權限, abc修正")
        .map(|(_, w)| w)
        .collect();
    assert_eq!(
        w,
        ["幫", "我", "修", "正", "device", "的", "權", "限", "abc", "修", "正"]
    );
    // Korean keeps its words.
    let w: Vec<&str> = words("권한 수정").map(|(_, w)| w).collect();
    assert_eq!(w, ["권한", "수정"]);
    assert_eq!(fts_text("幫我 a"), "幫\u{200B}我 a");
    assert!(matches!(
        fts_text("plain text"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert!(tsvector("幫我修正").contains("'修':3"));
}
