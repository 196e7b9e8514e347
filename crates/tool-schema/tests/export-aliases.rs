//! Export-name aliases: validity, reversibility, collisions, length.

use tool_schema::export::{MAX_EXPORT_NAME_LEN, is_valid_export_name};
use tool_schema::{AliasMap, ToolId};

fn ids(texts: &[&str]) -> Vec<ToolId> {
    texts
        .iter()
        .map(|text| ToolId::parse(text).unwrap())
        .collect()
}

fn alias_of<'m>(map: &'m AliasMap, id: &str) -> &'m str {
    map.alias(&ToolId::parse(id).unwrap()).unwrap()
}

#[test]
fn valid_names_are_their_own_alias() {
    let ids = ids(&["read_file", "Get-Player-Info", "a"]);
    let map = AliasMap::new(&ids);
    for id in &ids {
        assert_eq!(map.alias(id), Some(id.as_str()));
        assert_eq!(map.resolve(id.as_str()), Some(id));
    }
}

#[test]
fn rejected_characters_are_spelled_out() {
    let map = AliasMap::new(&ids(&[
        "workflow:summarize_text",
        "FileOperator.ApplyEdit",
        "kb:检索",
    ]));
    assert_eq!(
        alias_of(&map, "workflow:summarize_text"),
        "workflow__summarize_text"
    );
    assert_eq!(
        alias_of(&map, "FileOperator.ApplyEdit"),
        "FileOperator_ApplyEdit"
    );
    assert_eq!(alias_of(&map, "kb:检索"), "kb____");
    assert_eq!(
        map.resolve("workflow__summarize_text").map(ToolId::as_str),
        Some("workflow:summarize_text")
    );
    assert_eq!(map.resolve("workflow:summarize_text"), None);
    assert_eq!(map.len(), 3);
}

#[test]
fn an_alias_never_takes_another_ids_own_name() {
    let map = AliasMap::new(&ids(&["a:b", "a__b"]));
    assert_eq!(alias_of(&map, "a__b"), "a__b");
    let alias = alias_of(&map, "a:b");
    assert_ne!(alias, "a__b");
    assert!(
        alias.starts_with("a__b_") && alias.len() == "a__b_".len() + 8,
        "{alias}"
    );
    assert_eq!(map.resolve(alias).map(ToolId::as_str), Some("a:b"));
}

#[test]
fn ids_that_spell_alike_are_all_disambiguated() {
    let texts = ["p:b.c", "p:b/c", "p:b+c"];
    let map = AliasMap::new(&ids(&texts));
    let aliases: Vec<&str> = texts.iter().map(|id| alias_of(&map, id)).collect();
    assert!(aliases[0] != aliases[1] && aliases[1] != aliases[2] && aliases[0] != aliases[2]);
    for (alias, id) in aliases.iter().zip(texts) {
        assert!(alias.starts_with("p__b_c_"), "{alias}");
        assert_eq!(map.resolve(alias).map(ToolId::as_str), Some(id));
    }
}

#[test]
fn aliases_do_not_depend_on_order() {
    let forward = ids(&["p:b.c", "p:b/c", "workflow:x", "x", "workflow__x"]);
    let mut backward = forward.clone();
    backward.reverse();
    assert_eq!(AliasMap::new(&forward), AliasMap::new(&backward));
}

#[test]
fn long_ids_are_cut_with_a_stable_hash() {
    let long_a = format!("plugin:{}", "a".repeat(80));
    let long_b = format!("plugin:{}b", "a".repeat(79));
    let map = AliasMap::new(&ids(&[&long_a, &long_b]));
    let alias_a = alias_of(&map, &long_a);
    let alias_b = alias_of(&map, &long_b);
    assert_eq!(alias_a.len(), MAX_EXPORT_NAME_LEN);
    assert_eq!(alias_b.len(), MAX_EXPORT_NAME_LEN);
    assert_ne!(alias_a, alias_b);
    assert!(is_valid_export_name(alias_a) && is_valid_export_name(alias_b));
    // Stable across runs and platforms: the hash is FNV-1a of the id.
    assert_eq!(
        AliasMap::new(&ids(&[&long_a])).alias(&ToolId::parse(&long_a).unwrap()),
        Some(alias_a)
    );
    // A valid id of exactly 64 characters is kept.
    let exact = "x".repeat(64);
    assert_eq!(alias_of(&AliasMap::new(&ids(&[&exact])), &exact), exact);
}

#[test]
fn export_name_validity() {
    assert!(is_valid_export_name("a-b_C9"));
    assert!(is_valid_export_name(&"x".repeat(64)));
    assert!(!is_valid_export_name(&"x".repeat(65)));
    assert!(!is_valid_export_name(""));
    assert!(!is_valid_export_name("a:b"));
    assert!(!is_valid_export_name("a.b"));
    assert!(!is_valid_export_name("é"));
}

#[test]
fn repeated_tools_are_exported_once() {
    let tool = tool_schema::ToolDefinition::new(
        ToolId::parse("kb:Query").unwrap(),
        "Searches the knowledge base.",
        tool_schema::empty_parameters(),
        tool_schema::Implementation::Service,
    );
    let exported = tool_schema::export_tools([&tool, &tool], tool_schema::ExportFormat::Anthropic);
    assert_eq!(exported.tools.len(), 1);
    assert_eq!(exported.aliases.len(), 1);
    assert_eq!(exported.tools[0]["name"], "kb__Query");
}
