// What arrives from SQS: message bodies on the interruption queue, which anyone allowed to send
// to the queue can write (EventBridge events for spot interruption, rebalance, instance state
// change and scheduled change, the Health API's, possibly inside an SNS envelope), and the JSON
// error bodies of the SQS API. Properties: the message reader always returns a message (unknown
// and malformed bodies are kinds of their own); a message it would act on names an instance.
#include <cstdint>
#include <string>
#include <string_view>

#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/interruption_messages.h"
#include "test/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace aws = dovetail::providers::aws;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const aws::InterruptionMessage message = aws::ParseInterruptionMessage(body);
  if (message.actionable()) FUZZ_CHECK(!message.instance_ids.empty(), message.detail_type);
  (void)aws::ParseJsonError(aws::HttpResponse{.status = 400, .body = std::string(body)});
  return 0;
}
