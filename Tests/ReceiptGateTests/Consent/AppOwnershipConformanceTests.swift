import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// The app ownership answers as the running service gives them, against Deploy/openapi.yaml (the
/// validator `OpenAPIConformance` runs): the verify answer for a signed AppTransaction, the
/// lookup's answer and its refusals.
@Suite struct AppOwnershipConformance {
    @Test(
        .enabled(
            if: OpenAPIConformance.python != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to validate responses against the OpenAPI document"))
    func answersMatchTheDocument() async throws {
        let python = try #require(OpenAPIConformance.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let apple = try FakeAppStoreServerAPI()
        let harness = try await AppOwnershipChecks.start(apple)
        defer { harness.stop() }
        try apple.add("2000000000011001", environment: "Sandbox")
        try apple.addAppTransaction(["appTransactionId": AppOwnershipChecks.buyer], for: ["2000000000011001"])
        var records: [[String: Any]] = []
        func record(_ path: String, _ method: String, _ response: RawHTTP.Response, status: Int) throws {
            #expect(response.status == status, "\(path): \(response.text)")
            let body = try JSONSerialization.jsonObject(with: response.body)
            records.append(["path": path, "method": method, "status": response.status, "body": body])
        }
        try record(
            "/v1/verify", "post",
            try await harness.client.post(
                "/v1/verify",
                json: [
                    "store": "app_store", "receipt": try AppOwnershipChecks.appTransaction(apple.pki),
                    "player_id": "p",
                ]), status: 200)
        let path = "/v1/app-transactions/{store}/{transaction_id}"
        try record(
            path, "get", try await harness.client.get("/v1/app-transactions/app_store/2000000000011001"), status: 200)
        try record(
            path, "get", try await harness.client.get("/v1/app-transactions/app_store/2000000000011999"), status: 404)
        try record(path, "get", try await harness.client.get("/v1/app-transactions/app_store/x"), status: 400)
        try await OpenAPIConformance.validate(records, python: python, label: "app-ownership-conformance")
        await harness.service.shutdown()
        await apple.shutdown()
    }
}
