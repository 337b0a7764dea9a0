//! Implementations under test: the in-process reference and external
//! adapters speaking the protocol over a child process's stdin and stdout.

pub mod bridge;
pub mod loopback;
pub mod process;

use dshc_oracle::outcome::NotRun;
use dshc_scenario::protocol::{
    BenchReply, Case, CaseResult, ImplementationInfo, Level, LoopWorld, ReplyBody, RequestBody,
};
use loopback::LoopbackProvider;
use process::{AdapterFault, AdapterProcess};

/// What running one case on an implementation produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Ran {
    /// The case ran; here is what was observed.
    Observed(Box<CaseResult>),
    /// It did not.
    NotRun(NotRun),
}

impl Ran {
    fn skipped(reason: impl Into<String>) -> Ran {
        Ran::NotRun(NotRun::Skipped {
            reason: reason.into(),
        })
    }

    fn errored(context: impl Into<String>) -> Ran {
        Ran::NotRun(NotRun::Errored {
            context: context.into(),
        })
    }
}

/// Something that can run cases.
pub trait Implementation {
    /// Who it is, once known.
    fn info(&mut self) -> Option<ImplementationInfo>;
    /// Run one case.
    fn run(&mut self, case: &Case) -> Ran;
    /// Whether this implementation runs loops in real time with its own
    /// message ids: then its loop results are compared after
    /// [`dshc_oracle::normalize`] (ids and times redacted on both sides)
    /// instead of exactly. The reference's ids are counters and its times
    /// virtual, so it is compared exactly.
    fn real_time(&self) -> bool {
        false
    }
    /// Called after a panic while a case ran or was judged
    /// ([`crate::contain`]): drop whatever state that case may have left
    /// half-done, so that the next case starts clean.
    fn recover_from_panic(&mut self) {}
}

/// The Rust reference, in process.
#[derive(Default)]
pub struct Reference;

impl Implementation for Reference {
    fn info(&mut self) -> Option<ImplementationInfo> {
        Some(dshc_reference::reference_info())
    }

    fn run(&mut self, case: &Case) -> Ran {
        match crate::contain::contained(|| dshc_reference::run_case(case)) {
            Ok(Ok(result)) => Ran::Observed(Box::new(result)),
            Ok(Err(error)) => Ran::errored(format!("invalid case: {error}")),
            Err(panic) => Ran::NotRun(NotRun::Crashed {
                context: format!("the reference panicked: {panic}"),
            }),
        }
    }
}

/// An adapter process; restarted after any fault.
pub struct External {
    process: AdapterProcess,
}

impl External {
    /// Wrap an adapter process (started lazily).
    pub fn new(process: AdapterProcess) -> Self {
        External { process }
    }

    /// Stop the process.
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// How many processes were started.
    pub fn starts(&self) -> u32 {
        self.process.starts
    }

    /// Benchmark one fixture (extension `bench/1`), waiting at most
    /// `timeout_ms` for the reply; an error when the adapter does not offer
    /// the extension or the exchange fails.
    pub fn bench(
        &mut self,
        case: &Case,
        iterations: u32,
        batches: u32,
        timeout_ms: u64,
    ) -> Result<BenchReply, BenchError> {
        self.process.ensure_started().map_err(BenchError::Fault)?;
        if !self.process.capabilities.bench {
            return Err(BenchError::NotOffered);
        }
        let request = RequestBody::Bench {
            case: Box::new(case.clone()),
            iterations,
            batches,
        };
        match self.process.exchange_within(request, timeout_ms) {
            Ok(ReplyBody::Benched(reply)) => match checked_bench_reply(reply, batches) {
                Ok(reply) => Ok(reply),
                Err(context) => {
                    let _ = self.process.kill();
                    Err(BenchError::Protocol(context))
                }
            },
            Ok(ReplyBody::Errored { context }) => Err(BenchError::Errored(context)),
            Ok(other) => {
                let _ = self.process.kill();
                Err(BenchError::Protocol(format!(
                    "`bench` answered with {other:?}"
                )))
            }
            Err(fault) => Err(BenchError::Fault(fault)),
        }
    }
}

/// A `bench` reply that measured what was asked: one time per batch asked
/// for, none of them zero (a batch runs at least one step, and a zero time
/// would make every ratio to it infinite); else what is wrong with it.
fn checked_bench_reply(reply: BenchReply, batches: u32) -> Result<BenchReply, String> {
    if reply.batch_ns.len() != batches as usize {
        return Err(format!(
            "`bench` asked for {batches} batches and the reply times {}",
            reply.batch_ns.len()
        ));
    }
    if let Some(index) = reply.batch_ns.iter().position(|&ns| ns == 0) {
        return Err(format!(
            "`bench` reply: batch {index} took 0 ns, which no batch of steps can"
        ));
    }
    Ok(reply)
}

/// Why an adapter's `bench` measurement did not come back.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The adapter does not offer the extension.
    #[error("the adapter does not offer the bench/1 extension")]
    NotOffered,
    /// The adapter answered `errored`.
    #[error("{0}")]
    Errored(String),
    /// The answer broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The process crashed, timed out or broke the protocol on the way.
    #[error("{0}")]
    Fault(AdapterFault),
}

fn fault(fault: AdapterFault) -> Ran {
    match fault {
        AdapterFault::Crashed(context) => Ran::NotRun(NotRun::Crashed { context }),
        AdapterFault::TimedOut(timeout_ms) => Ran::NotRun(NotRun::TimedOut { timeout_ms }),
        AdapterFault::Protocol(context) => Ran::errored(format!("protocol error: {context}")),
    }
}

impl Implementation for External {
    fn info(&mut self) -> Option<ImplementationInfo> {
        // Known from the last handshake; never restarted just to ask.
        self.process.implementation.clone()
    }

    fn real_time(&self) -> bool {
        !self.process.capabilities.virtual_time
    }

    /// The exchange may have stopped anywhere, mid-line even: the process is
    /// killed (not asked to stop), and the next case starts a fresh one.
    fn recover_from_panic(&mut self) {
        let _ = self.process.kill();
    }

    fn run(&mut self, case: &Case) -> Ran {
        if let Err(error) = self.process.ensure_started() {
            return fault(error);
        }
        if !self.process.capabilities.levels.contains(&case.level) {
            return Ran::skipped(format!(
                "the adapter does not implement the {} level",
                case.level
            ));
        }
        if !self.process.capabilities.step_refs
            && dshc_scenario::protocol::step_refs::uses_step_refs(&case.commands)
        {
            return Ran::skipped(
                "a step takes a value from an earlier step's observation, and the adapter does \
                 not offer step_refs/1",
            );
        }
        match (case.level, &case.world) {
            (Level::Loop, Some(world)) if self.process.capabilities.virtual_time => {
                self.run_on_virtual_time(case, world)
            }
            _ => self.run_on_real_time(case),
        }
    }
}

impl External {
    /// A loop case on the harness's clock (`virtual_time/1`): the adapter's
    /// provider requests come over the protocol and are answered by the
    /// case's mock provider on the simulated network ([`bridge`]).
    fn run_on_virtual_time(&mut self, case: &Case, world: &LoopWorld) -> Ran {
        let mut bridge = match bridge::Bridge::new(world) {
            Ok(bridge) => bridge,
            Err(error) => return Ran::errored(format!("provider script: {error}")),
        };
        let command = RequestBody::Run {
            case: Box::new(case.clone()),
            provider_url: None,
            virtual_time: true,
        };
        let timeout_ms = self.process.timeout_ms();
        let replied = self
            .process
            .exchange_serving(command, timeout_ms, Some(&mut bridge));
        self.observed(replied, |run| {
            run.requests = dshc_reference::provider_requests(bridge.provider());
            if let Some(failure) = bridge.failure() {
                run.failure.get_or_insert_with(|| failure.to_owned());
            }
        })
    }

    /// A case in real time; a loop case gets its own provider on a
    /// loopback socket, alive until the reply is in (and its request log
    /// read).
    fn run_on_real_time(&mut self, case: &Case) -> Ran {
        let provider = match (case.level, &case.world) {
            (Level::Loop, Some(world)) => match LoopbackProvider::start(world.provider.clone()) {
                Ok(provider) => Some(provider),
                Err(error) => {
                    return Ran::errored(format!("cannot start the mock provider: {error}"));
                }
            },
            _ => None,
        };
        let command = RequestBody::Run {
            case: Box::new(case.clone()),
            provider_url: provider.as_ref().map(|p| p.url().to_string()),
            virtual_time: false,
        };
        let replied = self.process.exchange(command);
        self.observed(replied, |run| {
            if let Some(provider) = &provider {
                run.requests = provider.requests();
            }
        })
    }

    /// The outcome of a `run` exchange; `traffic` fills in what the
    /// harness's provider saw.
    fn observed(
        &mut self,
        replied: Result<ReplyBody, AdapterFault>,
        traffic: impl FnOnce(&mut dshc_scenario::protocol::LoopRun),
    ) -> Ran {
        match replied {
            Ok(ReplyBody::Result(mut result)) => {
                if let Some(run) = result.run.as_mut() {
                    traffic(run);
                }
                Ran::Observed(result)
            }
            Ok(ReplyBody::Skipped { reason }) => Ran::skipped(reason),
            Ok(ReplyBody::Errored { context }) => Ran::errored(context),
            Ok(other) => {
                let _ = self.process.kill();
                Ran::errored(format!("protocol error: `run` answered with {other:?}"))
            }
            Err(error) => fault(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(batch_ns: Vec<u64>) -> BenchReply {
        BenchReply {
            batch_ns,
            output_bytes: 10,
        }
    }

    #[test]
    fn a_bench_reply_must_time_every_batch_asked_for_and_none_in_zero() {
        assert_eq!(
            checked_bench_reply(reply(vec![5, 7]), 2),
            Ok(reply(vec![5, 7]))
        );
        let empty = checked_bench_reply(reply(Vec::new()), 3).unwrap_err();
        assert_eq!(empty, "`bench` asked for 3 batches and the reply times 0");
        let short = checked_bench_reply(reply(vec![1, 2]), 3).unwrap_err();
        assert!(short.contains("reply times 2"), "{short}");
        let zeros = checked_bench_reply(reply(vec![0, 0, 0]), 3).unwrap_err();
        assert_eq!(
            zeros,
            "`bench` reply: batch 0 took 0 ns, which no batch of steps can"
        );
        assert!(checked_bench_reply(reply(vec![4, 0]), 2).is_err());
    }
}
