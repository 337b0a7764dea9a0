//! The adapter protocol's two streams as one shared value: `dshc adapter`
//! reads and writes them between requests ([`crate::serve`]), and the
//! bridge host of a virtual-time case does while the case runs
//! ([`crate::virtual_time`]), so both live behind one `Rc<RefCell<_>>`.

use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::rc::Rc;

use dshc_scenario::protocol::Reply;

/// The protocol's input and output, shared by [`crate::serve::serve`]'s loop and the
/// bridge host of a virtual-time case.
pub(crate) struct Channel {
    input: Box<dyn BufRead>,
    output: Box<dyn Write>,
}

/// A [`Channel`] both sides hold.
pub(crate) type SharedChannel = Rc<RefCell<Channel>>;

impl Channel {
    /// A channel over these streams.
    pub(crate) fn new(input: impl BufRead + 'static, output: impl Write + 'static) -> Channel {
        Channel {
            input: Box::new(input),
            output: Box::new(output),
        }
    }

    /// The next line without its line end; `None` at the end of input.
    pub(crate) fn read_line(&mut self) -> std::io::Result<Option<String>> {
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end_matches(['\n', '\r']).len();
        line.truncate(trimmed);
        Ok(Some(line))
    }

    /// Write one reply line and flush it.
    pub(crate) fn write_reply(&mut self, reply: &Reply) -> std::io::Result<()> {
        let line = serde_json::to_string(reply).map_err(std::io::Error::other)?;
        writeln!(self.output, "{line}")?;
        self.output.flush()
    }
}
