//! The adapters' view of this crate's decoders ([`tam_parse::StreamDecoder`]).

use crate::{Decoder, Event, MixedDecoder, MixedEvent};

tam_parse::impl_stream_decoder!(Decoder, Event<'static>);
tam_parse::impl_stream_decoder!(MixedDecoder, MixedEvent<'static>);
