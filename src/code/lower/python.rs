//! python lowered into [`crate::code::ir`] (work in progress: written next).
