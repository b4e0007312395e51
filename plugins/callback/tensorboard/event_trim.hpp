#pragma once
// Trims the event files a run wrote before a resume. TensorBoard's own
// readers show the newest value of a step, but other readers (and summary
// iterators) see every event: a resumed run that trains an epoch again would
// leave it twice. Reads only what EventWriter writes (see event_writer.hpp).
#include <cstdint>
#include <string>

namespace skein_tb {

// In every events.out.tfevents.* file of `dir`, keeps the records that a
// checkpoint at epoch `last_epoch` covers: epoch scalars of step <= last_epoch,
// "batch/" scalars of step < `batch_steps`, and records without scalars (the
// file_version header). Records from the first one cut short or damaged on
// (a kill mid-write) go too. A file is rewritten atomically, and only when
// something goes. A missing `dir` is no error.
void keep_events_up_to(const std::string& dir, std::int64_t last_epoch, std::int64_t batch_steps);

}  // namespace skein_tb
