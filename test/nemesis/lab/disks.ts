// Size-limited stores for the nemesis's nodes: one tmpfs per node (its JetStream store_dir), which
// a ballast file fills to the last byte (the disk is full) and whose removal gives the space back.
// tmpfs rather than a loop-mounted ext4: no image file on the shared disk and no fsync cost on a
// busy machine; ENOSPC is what nats-server sees either way.
import { execFile } from "node:child_process";
import { open, mkdir, rm, statfs } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { recordMount, type Lab } from "./lab.js";

const run = promisify(execFile);

export interface Disk {
  readonly path: string;
  /** Writes a ballast file until the file system is full; resolves with the bytes written. */
  fill(): Promise<number>;
  /** Removes the ballast. */
  free(): Promise<void>;
  /** Free bytes right now. */
  available(): Promise<number>;
}

export async function mountDisk(lab: Lab, path: string, sizeBytes: number): Promise<Disk> {
  await mkdir(path, { recursive: true });
  await run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0755`, "tmpfs", path]);
  await recordMount(lab, path);
  const ballast = join(path, "ballast");
  return {
    path,
    async fill() {
      const fh = await open(ballast, "a");
      const chunk = Buffer.alloc(1 << 20, 0x61);
      let written = 0;
      try {
        // Big chunks first, then ever smaller ones, so not even a 1-byte write is left room.
        for (let size = chunk.length; size >= 1; size = Math.floor(size / 4)) {
          for (;;) {
            try {
              const { bytesWritten } = await fh.write(chunk, 0, size);
              written += bytesWritten;
              if (bytesWritten < size) break;
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code === "ENOSPC") break;
              throw err;
            }
          }
        }
      } finally {
        await fh.close();
      }
      return written;
    },
    free: () => rm(ballast, { force: true }),
    async available() {
      const s = await statfs(path);
      return s.bavail * s.bsize;
    },
  };
}

export async function unmountDisk(disk: Disk): Promise<void> {
  await run("umount", ["-l", disk.path]).catch(() => undefined);
}
