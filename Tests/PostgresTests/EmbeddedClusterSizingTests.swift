import Testing

@testable import Postgres

/// What the embedded cluster is told about the machine it is made on.
@Suite struct EmbeddedClusterSizing {
    @Test func buffersAreAnEighthOfMemoryWithinBoundsAndCheckpointsAreSpaced() {
        let big = EmbeddedCluster.sizedFor(physicalMemory: 24 << 30)
        #expect(big.contains("shared_buffers = 2048MB"), "capped at 2 GB: \(big)")
        #expect(big.contains("effective_cache_size = 12288MB"))
        let middling = EmbeddedCluster.sizedFor(physicalMemory: 8 << 30)
        #expect(middling.contains("shared_buffers = 1024MB"))
        let small = EmbeddedCluster.sizedFor(physicalMemory: 512 << 20)
        #expect(small.contains("shared_buffers = 128MB"), "never below Postgres's own default: \(small)")
        for settings in [big, middling, small] {
            #expect(
                settings.contains("wal_compression = on") && settings.contains("max_wal_size = 4GB")
                    && settings.contains("checkpoint_timeout = 15min"))
        }
    }
}
