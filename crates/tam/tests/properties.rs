//! Property tests of the decoder of both protocols: any split gives the events of the
//! whole input and spans tile it, and arbitrary bytes never panic.

mod common;

use action_xml::{Config, render_action};
use common::{Front, action_config};
use proptest::prelude::*;
use tam_testkit::strategies::{action_like, call, small_limits};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any split of any input gives the events of the whole input, and spans tile it,
    /// argument-streaming events included, with small ACTION limits.
    #[test]
    fn any_split_gives_the_same_mixed_events(input in action_like(), limits in small_limits()) {
        let mut mixed = tam::Config::default();
        mixed.action = action_config(limits);
        tam_testkit::decode_all_ways(Front(mixed), input.as_bytes());
    }

    /// Any split gives the same events, argument-streaming events included (adjacent
    /// pieces merged), with limits no generated block reaches.
    #[test]
    fn any_split_gives_the_same_streamed_events(input in action_like()) {
        tam_testkit::decode_all_ways(Front(tam::Config::default()), input.as_bytes());
    }

    /// Rendered blocks in prose, past a small `max_block_bytes`: the streamed prefix and
    /// everything else are the same whatever the split.
    #[test]
    fn overflowing_blocks_stream_the_same_events(
        calls in prop::collection::vec(call(), 1..3),
        limit in 16usize..300,
    ) {
        let block = render_action(calls.iter().map(|(t, a)| (t.as_str(), a))).unwrap();
        let text = format!("Thinking…\n{block}\nDone.");
        let mut config = Config::default();
        config.max_block_bytes = limit;
        let mut mixed = tam::Config::default();
        mixed.action = config;
        tam_testkit::decode_all_ways(Front(mixed), text.as_bytes());
    }

    /// Arbitrary bytes never panic, and splitting still does not matter.
    #[test]
    fn arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..200)) {
        tam_testkit::decode_all_ways(Front(tam::Config::default()), &input);
    }
}
