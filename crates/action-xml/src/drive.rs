//! The adapters' view of this crate's decoder ([`tam_parse::StreamDecoder`]).

use crate::{Decoder, Event};

tam_parse::impl_stream_decoder!(Decoder, Event<'static>);
