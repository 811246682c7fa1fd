//! Encoding, stage by stage: split off the special tokens ([`special`]), cut the ordinary
//! text into pieces ([`pretok`]), give each piece its merge-rank BPE tokens ([`bpe`]); the
//! [`encoder`] puts the stages together over a [`Vocab`](crate::vocab::Vocab).

pub mod bpe;
pub mod encoder;
pub mod pretok;
pub mod special;
