import Foundation

/// One binary, several harnesses: `FUZZ_HARNESS` names the one libFuzzer drives (scripts/fuzz.sh
/// sets it, with that harness's corpus folder). Each harness must never trap, whatever the bytes;
/// an invariant it checks fails with `fatalError`, which libFuzzer reports as a crash with the input.
let harnesses: [String: @Sendable (Data) -> Void] = [
    "jws": JWSHarness.run,
    "receipt": ReceiptHarness.run,
    "alogame": AlogameHarness.run,
    "native": NativeHarness.run,
]

nonisolated(unsafe) var selected: (@Sendable (Data) -> Void)?

@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    let name = ProcessInfo.processInfo.environment["FUZZ_HARNESS"] ?? ""
    guard let harness = harnesses[name] else {
        FileHandle.standardError.write(
            Data("FUZZ_HARNESS must be one of \(harnesses.keys.sorted().joined(separator: ", "))\n".utf8))
        exit(2)
    }
    selected = harness
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    selected?(data)
    return 0
}

/// Runs async work to completion from libFuzzer's synchronous callback.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    Task {
        box.value = await body()
        box.done.signal()
    }
    box.done.wait()
    guard let value = box.value else { fatalError("async body produced no value") }
    return value
}

/// Written by the task before it signals, read after the wait: the semaphore orders the two.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}
