//! The ACTION blocks the `action_xml` benchmark parses (and `profile-decode action …`
//! profiles): one call whose parameters — text with an entity, a list, an object and a
//! CDATA diff — are repeated `repeat` times.

/// The body of one call (`<ApplyProjectDiff>…</ApplyProjectDiff>`) with `repeat` rounds of
/// parameters: 568 bytes of block for 1 round, 66 KiB for 128.
pub fn body(repeat: usize) -> String {
    let mut out = String::from("<ApplyProjectDiff>\n");
    for i in 0..repeat {
        out.push_str(&format!(
            "  <target_file_{i}>config/settings_{i}.json</target_file_{i}>\n\
             \x20 <reason_{i}>Enable the feature &amp; keep the old key; see ticket #{i}.</reason_{i}>\n\
             \x20 <files_{i}>\n    <item>src/app.ts</item>\n    <item>src/utils.ts</item>\n  </files_{i}>\n\
             \x20 <options_{i}>\n    <mode>replace</mode>\n    <dry_run>false</dry_run>\n  </options_{i}>\n\
             \x20 <diff_{i}>\n    <![CDATA[\n--- a/config/settings.json\n+++ b/config/settings.json\n\
             @@ -1,5 +1,5 @@\n {{\n-  \"feature_enabled\": false,\n+  \"feature_enabled\": true,\n\
             \x20  \"api_key\": \"old_key_value\"\n }}\n    ]]>\n  </diff_{i}>\n"
        ));
    }
    out.push_str("</ApplyProjectDiff>");
    out
}

/// The whole block: [`body`] inside `<ACTION>` … `</ACTION>`.
pub fn block(repeat: usize) -> String {
    format!("<ACTION>\n{}\n</ACTION>", body(repeat))
}
