use super::report::doc_offset;
use super::*;
use crate::config::grammar;
use crate::prescan::RegionKind;
use proptest::prelude::*;
use tam_parse::scan::{BlockView, ScanHandler, Scanner};

/// Builds every block three ways: the direct reader alone, the clean document and
/// roxmltree alone, and the full pre-scan; records whether the direct reader read it.
#[derive(Default)]
struct BothWays {
    open: OpenBlock,
    pending: Option<usize>,
    pairs: Vec<(Built, Built)>,
    clean: Vec<Built>,
    direct_read: Vec<bool>,
}

const DIRECT: Paths = Paths {
    direct: true,
    clean: false,
};
const CLEAN: Paths = Paths {
    direct: false,
    clean: true,
};
const FULL: Paths = Paths {
    direct: false,
    clean: false,
};

impl BothWays {
    /// Scans `input` whole, building each block the three ways.
    fn scan(input: &str) -> BothWays {
        let mut handler = BothWays::default();
        let mut scanner = Scanner::new(grammar(), 1 << 20);
        scanner.feed(input, &mut handler);
        scanner.finish(&mut handler);
        handler
    }
}

impl ScanHandler for BothWays {
    fn text(&mut self, _: &str, _: Span) {}

    fn region_opened(&mut self, _: &BlockView<'_>, _: usize, marker: Range<usize>) {
        self.pending = Some(marker.start);
    }

    fn region_closed(
        &mut self,
        _: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        if let Some(start) = self.pending.take() {
            self.open.regions.push(RegionRef {
                kind: if region == 0 {
                    RegionKind::Cdata
                } else {
                    RegionKind::Comment
                },
                full: start..marker.end,
                content,
                closed: true,
            });
        }
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        let open = std::mem::take(&mut self.open);
        let config = Config::default();
        self.direct_read.push(
            closed.end == BlockEnd::Marker
                && read_direct(
                    &closed.raw,
                    closed.body.clone(),
                    &closed.offsets,
                    64,
                    1 << 16,
                    false,
                )
                .is_some(),
        );
        let fast = build_block_with(&closed, open.clone(), 0, &config, DIRECT, None);
        let clean = build_block_with(&closed, open.clone(), 0, &config, CLEAN, None);
        let full = build_block_with(&closed, open, 0, &config, FULL, None);
        self.clean.push(clean);
        self.pairs.push((fast, full));
    }
}

const PIECES: &[&str] = &[
    "<ACTION>",
    "</ACTION>",
    "<t>",
    "</t>",
    "<a>",
    "</a>",
    "<A>",
    "<item>",
    "</item>",
    "<p:x>",
    "</p:x>",
    "<e/>",
    "<e />",
    "<a b='1'>",
    "<a b=\"&\">",
    "<![CDATA[",
    "]]>",
    "]]",
    "<!--",
    "-->",
    "x",
    "中",
    "&",
    "&amp;",
    "&#0;",
    "&#x41;",
    "&lol;",
    "<",
    ">",
    "</",
    "\n",
    " ",
    "<?pi?>",
    "<!DOCTYPE x>",
    "```xml\n",
    "<x:y:z>",
    "<1>",
    "</ t>",
    "<t >",
    "</t >",
    "<_a>",
    "</_a>",
    "&#32;",
    "\r\n",
    "<xmlns>",
    "</xmlns>",
    "<xml>",
    "\u{FEFF}",
    "\u{1}",
    "\u{FFFE}",
    "&#0065;",
    "<item/>",
    "<t\n>",
    "</t\n>",
    "<t/ >",
    "<a>x<b>y</b></a>",
    "<>",
    "</>",
    "<t<a>",
    "<a x='>'>",
    "<![cdata[",
    "<![CDATA[]]>",
    "&lt;&gt;",
    "&#x20;",
    "/>",
];

/// Well-formed bodies, which the fast path takes.
fn element() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["t", "a", "item", "p:x", "名", "_b"]);
    let text = prop::sample::select(vec![
        "x",
        "中",
        "&amp;",
        " ",
        "\n",
        "<![CDATA[a<b]]>",
        "&#x41;",
        "",
    ]);
    (name.clone(), text)
        .prop_map(|(n, t)| format!("<{n}>{t}</{n}>"))
        .prop_recursive(4, 32, 4, move |inner| {
            (
                name.clone(),
                prop::collection::vec(inner, 0..4),
                prop::bool::ANY,
            )
                .prop_map(|(n, children, empty)| {
                    if empty && children.is_empty() {
                        format!("<{n}/>")
                    } else {
                        format!("<{n}>{}</{n}>", children.concat())
                    }
                })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// On well-formed bodies the fast path applies and agrees with the full pre-scan.
    #[test]
    fn fast_path_takes_well_formed_bodies(elements in prop::collection::vec(element(), 0..4)) {
        let body = elements.concat().replace("p:x", "x");
        let regions: Vec<RegionRef> = Vec::new();
        let has_cdata = body.contains("<![CDATA[");
        let clean = clean_document(&body, &regions, 64);
        // Without CDATA (whose regions the scanner would report) the body is clean.
        prop_assert!(has_cdata || clean.is_some(), "{}", body);
        let input = format!("<ACTION>{body}</ACTION>");
        let handler = BothWays::scan(&input);
        let (fast, full) = &handler.pairs[0];
        prop_assert_eq!(fast, full, "{}", input);
        if elements.is_empty() {
            // No element between the tags: a mention of them in prose.
            prop_assert!(matches!(fast, Built::Prose(_)), "{:?}", fast);
        } else {
            let fast = fast.clone().block();
            prop_assert!(!fast.has_errors(), "{:?}", fast.diagnostics);
        }
    }

    /// The fast path never changes the result: it applies only where the full pre-scan
    /// would change nothing.
    #[test]
    fn fast_path_agrees_with_the_full_pre_scan(
        parts in prop::collection::vec(prop::sample::select(PIECES), 0..30)
    ) {
        let input = format!("<ACTION>{}</ACTION>", parts.concat());
        let handler = BothWays::scan(&input);
        for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
            prop_assert_eq!(fast, full, "{}", input);
            prop_assert_eq!(clean, full, "{}", input);
        }
    }

    /// Calls as models write them (text with references and line ends, CDATA, code
    /// with markup, lists, repeated names, objects) are read by the direct reader, and
    /// its result is the roxmltree paths' to the byte.
    #[test]
    fn direct_reader_reads_what_models_write(
        calls in prop::collection::vec(call(), 0..4),
        between in prop::sample::select(vec!["", "\n", "\r\n  ", " \t"]),
    ) {
        let input = format!("<ACTION>{between}{}{between}</ACTION>", calls.join(between));
        let handler = BothWays::scan(&input);
        prop_assert!(handler.direct_read[0], "not read directly: {}", input);
        let (fast, full) = &handler.pairs[0];
        prop_assert_eq!(fast, full, "{}", input);
        prop_assert_eq!(&handler.clean[0], full, "{}", input);
        if calls.is_empty() {
            // No element between the tags: a mention of them in prose.
            prop_assert!(matches!(fast, Built::Prose(_)), "{:?}", fast);
        } else {
            prop_assert!(!fast.clone().block().has_errors());
        }
    }

    /// Whatever the direct reader reads, the full path reads without any diagnostic
    /// of its body but the repairs inside values that the direct reader makes itself
    /// (`bare_ampersand`, `unescaped_lt`) and `empty_block`: the direct reader takes
    /// no body that needs another repair or a warning. (`fenced_block` is about where
    /// the block stands, a code fence in the prose before it, not about its body.)
    #[test]
    fn direct_reader_takes_only_bodies_without_other_diagnostics(
        parts in prop::collection::vec(prop::sample::select(PIECES), 0..30)
    ) {
        let input = format!("<ACTION>{}</ACTION>", parts.concat());
        let handler = BothWays::scan(&input);
        for ((_, full), direct) in handler.pairs.iter().zip(&handler.direct_read) {
            if *direct && let Built::Block(b) = full {
                prop_assert!(
                    b.diagnostics.iter().all(|d| [
                        codes::EMPTY_BLOCK,
                        codes::FENCED_BLOCK,
                        codes::BARE_AMPERSAND,
                        codes::UNESCAPED_LT,
                    ]
                    .contains(&d.code)),
                    "{}: {:?}", input, b.diagnostics
                );
            }
        }
    }
}

/// Pieces of code values: text the pre-scan repairs (`<` that begins no tag, a bare
/// `&`, elements never closed, close tags that match nothing) beside tags that are
/// elements, references, CDATA and the odd thing the direct reader leaves to the full
/// path.
const CODE: &[&str] = &[
    "a < b",
    "&&",
    "&mut x",
    "&amp;",
    "&#60;",
    "Vec<T>",
    "Vec<String>",
    "<T>",
    "</T>",
    "<t>",
    "</t>",
    "<b>x</b>",
    "<br/>",
    "<br />",
    "<br/ >",
    "</div>",
    "</ div>",
    "</div x>",
    "HashMap<K, V>",
    "impl<'a>",
    "<<=",
    "<=",
    "<",
    "&",
    "<item>",
    "</item>",
    "<a b='1'>",
    "<a b='<'>",
    "<a b>",
    "<a b=1>",
    "<a b='1' c>",
    "<p:x>",
    "</p:x>",
    "<xml>",
    "<![CDATA[a<b]]>",
    "<!x",
    "<!-",
    "<?",
    "<!-- c -->",
    "]]>",
    "]]",
    ">",
    "x",
    " ",
    "\n",
    "中",
    "<v>",
    "</v>",
    "</V>",
    "<ACTION>",
    "</c>",
    "<c>",
];

/// The pieces of [`CODE`] the direct reader takes (most of what models write).
const CODE_TAKEN: &[&str] = &[
    "a < b",
    "&&",
    "&amp;",
    "Vec<T>",
    "<T>",
    "</T>",
    "<t>",
    "</t>",
    "<b>x</b>",
    "<br/>",
    "</div>",
    "</ div>",
    "HashMap<K, V>",
    "impl<'a>",
    "<",
    "&",
    "<item>",
    "</item>",
    "<a b>",
    "<![CDATA[a<b]]>",
    "<!x",
    "x",
    " ",
    "\n",
    "<v>",
    "</v>",
    "</c>",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Values full of code: whatever the direct reader takes, it reads as the full
    /// pre-scan and roxmltree do, warnings (`bare_ampersand`, `unescaped_lt`: the first
    /// place, the count) included.
    #[test]
    fn direct_reader_agrees_on_code_values(
        pieces in prop::bool::ANY.prop_flat_map(|taken| {
            let pieces = prop::sample::select(if taken { CODE_TAKEN } else { CODE });
            prop::collection::vec(prop::collection::vec(pieces, 0..12), 1..4)
        }),
        depth in 0usize..2,
    ) {
        let values = pieces;
        let params: String = values
            .iter()
            .map(|v| {
                let v = v.concat();
                if depth == 0 { format!("<v>{v}</v>") } else { format!("<o><v>{v}</v></o>") }
            })
            .collect();
        let input = format!("<ACTION><c>{params}</c></ACTION>");
        let handler = BothWays::scan(&input);
        for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
            prop_assert_eq!(fast, full, "{}", input);
            prop_assert_eq!(clean, full, "{}", input);
        }
    }
}

/// Close tags with blanks between `</` and the name, of the elements open (the call
/// `c`, the parameters `v`, the object `o`), in another case or of nothing open, beside
/// [`CODE`].
const SPACED: &[&str] = &[
    "</ v>",
    "</  v >",
    "</\tV>",
    "</ o>",
    "</ O\n>",
    "</ c>",
    "</ C>",
    "</ T>",
    "</ div>",
    "</ ",
    "</\n",
    "</ v",
    "<![CDATA[</ v>]]>",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Close tags with blanks before the name (the pre-scan's `noncanonical_tag` where
    /// they close an open element, text where they close nothing): whatever the direct
    /// reader takes, it reads as the full pre-scan and roxmltree do.
    #[test]
    fn direct_reader_agrees_on_close_tags_with_blanks(
        values in prop::collection::vec(
            prop::collection::vec(
                prop_oneof![prop::sample::select(CODE), prop::sample::select(SPACED)],
                0..10,
            ),
            1..4,
        ),
        closes in prop::collection::vec(prop::sample::select(&["</v>", "</ v>", "</ V >"][..]), 4),
        depth in 0usize..2,
        call_close in prop::sample::select(&["</c>", "</ c>", "</\tC>"][..]),
    ) {
        let params: String = values
            .iter()
            .zip(&closes)
            .map(|(v, close)| {
                let v = v.concat();
                let o_close = close.replace('v', "o").replace('V', "O");
                if depth == 0 { format!("<v>{v}{close}") } else { format!("<o><v>{v}{close}{o_close}") }
            })
            .collect();
        let input = format!("<ACTION><c>{params}{call_close}</ACTION>");
        let handler = BothWays::scan(&input);
        for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
            prop_assert_eq!(fast, full, "{}", input);
            prop_assert_eq!(clean, full, "{}", input);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Parameters left open before their call's close tag (the pre-scan's
    /// `missing_close_tag`, where no close tag inside matched nothing), the call's close
    /// tag as written, with blanks or in another case, values of code with close tags of
    /// the call inside: whatever the direct reader takes, it reads as the full pre-scan
    /// and roxmltree do.
    #[test]
    fn direct_reader_agrees_on_parameters_left_open(
        values in prop::collection::vec(
            prop::collection::vec(
                prop_oneof![
                    prop::sample::select(CODE),
                    prop::sample::select(SPACED),
                    prop::sample::select(&["</C>", "<c>", "</ c >", "<c/>"][..]),
                ],
                0..8,
            ),
            1..4,
        ),
        closed in prop::collection::vec(prop::bool::ANY, 4),
        depth in 0usize..2,
        call_close in prop::sample::select(&["</c>", "</ c>", "</C>", "</\tC >"][..]),
    ) {
        let params: String = values
            .iter()
            .zip(&closed)
            .map(|(v, closed)| {
                let v = v.concat();
                let close = if *closed { "</v>" } else { "" };
                if depth == 0 { format!("<v>{v}{close}") } else { format!("<o><v>{v}{close}</o>") }
            })
            .collect();
        let input = format!("<ACTION><c>{params}{call_close}</ACTION>");
        let handler = BothWays::scan(&input);
        for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
            prop_assert_eq!(fast, full, "{}", input);
            prop_assert_eq!(clean, full, "{}", input);
        }
    }
}

#[test]
fn direct_reader_takes_code() {
    for value in [
        "fn f(a: &str) -> bool { a.len() < 3 && b > 0 }",
        "let v: Vec<usize> = Vec::with_capacity(8); // Vec<u8> &amp; &lt;",
        "let m: HashMap<String, bool> = HashMap::new(); impl<'a> X<'a> {}",
        "x <<= 2; y &= 0xff; if b[i] < b'<' { n += 1; }",
        "s = \"</div>\"; Box<dyn Fn(&T) -> Option<&U>>",
        // Elements never closed cost no depth: more of them than `max_depth` (64).
        &"let v: Vec<u8> = x;\n".repeat(100),
    ] {
        let input = format!(
            "<ACTION><write_to_file><path>a.rs</path><content>\n{value}</content></write_to_file></ACTION>"
        );
        let handler = BothWays::scan(&input);
        assert!(handler.direct_read[0], "not read directly: {input}");
        let (fast, full) = &handler.pairs[0];
        assert_eq!(fast, full, "{input}");
        let block = fast.clone().block();
        let want = value.trim().replace("&amp;", "&").replace("&lt;", "<");
        assert_eq!(block.calls[0].get_str("content"), Some(want.as_str()));
    }
}

/// One call element with parameters as models write them.
fn call() -> impl Strategy<Value = String> {
    let tool = prop::sample::select(vec!["read_file", "ApplyProjectDiff", "名前", "t"]);
    let key = prop::sample::select(vec!["path", "content", "a", "item", "mode"]);
    let value = prop::sample::select(vec![
        "",
        "src/main.rs",
        "  spaced  ",
        "a &lt; b &amp;&amp; c &gt; d",
        "&#32;edge&#x20;",
        "&#xD;&#10;x",
        "line\r\nnext\rlast",
        "<![CDATA[\nfn main() { if a < b && c > d {} }\n    ]]>",
        "\n  <![CDATA[x]]>  <![CDATA[ y ]]>\n",
        "let s = <b>x</b>;",
        "return <div>{x}</div>;",
        "<item>a</item><item>b &amp; c</item>",
        "\n  <item>a</item>\n  <item/>\n",
        "<mode>x</mode><mode>y</mode><mode>z</mode>",
        "<k><item>1</item></k><k>2</k><k>3</k>",
        "<o><p>1</p><q><![CDATA[2]]></q></o>",
        // Code, which the pre-scan repairs the same way everywhere.
        "if a < b && c > d { x(&y) }",
        "let v: Vec<String> = HashMap<K, V>::new();",
        "impl<'a> Iterator for S<'a> { a <<= 2; b &= c; }",
        "s = \"</div>\"; t = \"<br/ >\";",
        "for i in 0..n { if b[i] < b'<' { c += 1; } } // &amp; &lt;",
        "<e/>",
        "中文 ＦＦ",
        "&#0065;&#x4E2D;",
    ]);
    let param = (key, value).prop_map(|(k, v)| {
        if v.is_empty() {
            format!("<{k}/>")
        } else {
            format!("<{k}>{v}</{k}>")
        }
    });
    (tool, prop::collection::vec(param, 0..5), prop::bool::ANY).prop_map(
        |(tool, params, spaced)| {
            let sep = if spaced { "\n  " } else { "" };
            format!("<{tool}>{sep}{}{sep}</{tool}>", params.join(sep))
        },
    )
}

#[test]
fn doc_offsets_count_characters() {
    assert_eq!(doc_offset("ab\n文字x", 2, 3), 3 + 6);
    assert_eq!(doc_offset("ab", 1, 1), 0);
    assert_eq!(doc_offset("ab", 5, 9), 2);
}
