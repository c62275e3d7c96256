package laketide.spark;

import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF2;

/**
 * Paimon's fixed bucket of a row: abs(murmur3_32(BinaryRow(bucket key)) % numBuckets), as laketide.meta.bucket
 * and Java's DefaultBucketFunction compute it. The key arrives as a struct of tinyint / smallint / int (dates as
 * their epoch day) / bigint / boolean / string fields; laketide.spark.jvm_bucket sends no other types.
 *
 * Paimon: org.apache.paimon.data.BinaryRow, org.apache.paimon.utils.MurmurHashUtils.hashBytesByWords
 */
public final class PaimonBucket implements UDF2<Row, Integer, Integer> {
    private static final int SEED = 42;
    private static final int MAX_INLINE = 7;

    @Override
    public Integer call(Row key, Integer numBuckets) {
        int k = key.length();
        int nullBytes = ((k + 63 + 8) / 64) * 8;
        int fixed = nullBytes + 8 * k;
        byte[][] strings = new byte[k][];
        int size = fixed;
        for (int i = 0; i < k; i++) {
            Object v = key.get(i);
            if (v instanceof String) {
                byte[] b = ((String) v).getBytes(StandardCharsets.UTF_8);
                strings[i] = b;
                if (b.length > MAX_INLINE) {
                    size += (b.length + 7) & ~7;
                }
            }
        }
        byte[] row = new byte[size];
        int cursor = fixed;
        for (int i = 0; i < k; i++) {
            Object v = key.get(i);
            int slot = nullBytes + 8 * i;
            if (v == null) {
                int bit = i + 8;
                row[bit >> 3] |= (byte) (1 << (bit & 7));
            } else if (v instanceof Long) {
                putLong(row, slot, (Long) v);
            } else if (v instanceof Integer) {
                putLong(row, slot, ((Integer) v) & 0xFFFFFFFFL);
            } else if (v instanceof Short) {
                putLong(row, slot, ((Short) v) & 0xFFFFL);
            } else if (v instanceof Byte) {
                putLong(row, slot, ((Byte) v) & 0xFFL);
            } else if (v instanceof Boolean) {
                putLong(row, slot, ((Boolean) v) ? 1L : 0L);
            } else if (v instanceof String) {
                byte[] b = strings[i];
                if (b.length <= MAX_INLINE) {
                    System.arraycopy(b, 0, row, slot, b.length);
                    row[slot + 7] = (byte) (0x80 | b.length);
                } else {
                    System.arraycopy(b, 0, row, cursor, b.length);
                    putLong(row, slot, ((long) cursor << 32) | b.length);
                    cursor += (b.length + 7) & ~7;
                }
            } else {
                throw new IllegalArgumentException("laketide: no BinaryRow form for " + v.getClass().getName());
            }
        }
        int h = SEED;
        for (int off = 0; off < size; off += 4) {
            int word = (row[off] & 0xFF) | (row[off + 1] & 0xFF) << 8 | (row[off + 2] & 0xFF) << 16
                    | (row[off + 3] & 0xFF) << 24;
            int k1 = word * 0xCC9E2D51;
            k1 = Integer.rotateLeft(k1, 15) * 0x1B873593;
            h = Integer.rotateLeft(h ^ k1, 13) * 5 + 0xE6546B64;
        }
        h ^= size;
        h ^= h >>> 16;
        h *= 0x85EBCA6B;
        h ^= h >>> 13;
        h *= 0xC2B2AE35;
        h ^= h >>> 16;
        return Math.abs(h % numBuckets);
    }

    private static void putLong(byte[] row, int at, long v) {
        for (int i = 0; i < 8; i++) {
            row[at + i] = (byte) (v >>> (8 * i));
        }
    }
}
