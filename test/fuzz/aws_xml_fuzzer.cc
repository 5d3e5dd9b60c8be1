// EC2 and IAM replies (the AWS Query protocol's XML) as Dovetail reads them: any 2xx body goes
// through pugixml and the reply readers of DescribeInstanceTypes, DescribeInstanceStatus,
// DescribeInstances, CreateFleet, DescribeCapacityReservations and IAM's instance profile replies;
// any error body through the error reader AwsClient uses on 4xx/5xx. The readers run on the
// document element, as the clients call them, and on every element below it, so a reply nested
// anywhere is reached. Property: an error code read from a reply is never longer than the reply.
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/cloudprovider/fleet.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/nodeclass/resolvers.h"
#include "pugixml.hpp"
#include "test/fuzz/fuzz_check.h"

namespace {

namespace aws = dovetail::providers::aws;

void ReadReplies(const pugi::xml_node& root) {
  (void)aws::ParseDescribeInstances(root);
  (void)aws::ParseCreateFleetResponse(root);
  (void)aws::nodeclass::ParseCapacityReservations(root, absl::FromUnixSeconds(1780000000));
  (void)aws::ParseTagSet(root);
  for (pugi::xml_node item : root.child("instanceTypeSet").children("item")) {
    (void)aws::ParseInstanceType(item);
  }
  for (pugi::xml_node item : root.child("instanceStatusSet").children("item")) {
    (void)aws::ParseInstanceStatus(item);
  }
  (void)aws::ParseInstanceProfile(root);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (const int status : {400, 503}) {
    const aws::AwsErrorDetail error =
        aws::ParseXmlError(aws::HttpResponse{.status = status, .body = body});
    FUZZ_CHECK(error.code.size() <= body.size(), error.code);
  }
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return 0;
  ReadReplies(doc.document_element());
  int elements = 0;
  for (pugi::xml_node node : doc.document_element().children()) {
    if (++elements > 64) break;  // bounded work per input
    ReadReplies(node);
  }
  return 0;
}
