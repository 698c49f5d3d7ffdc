# Which local paths of the training script live in object storage (OBS/S3) on ModelArts.
#
# format: '<path as the script names it>': '<obs or s3 path>'
#   - local paths are taken relative to the folder the script is started from (or absolute);
#   - a path maps a folder (everything below it) or a single file.
#
# 'input':  copied from object storage before training (at the script's first file access);
#           the script reads the copy.
# 'output': the script writes into a local cache instead, which is copied to object storage
#           when the script ends.
#
# Without the ModelArts SDK (moxing) these mappings are ignored and the script uses the local
# paths as written, so it still runs on any machine.
PATH_MAPPING_CONFIG = {
    'input': {
        # Add path mapping here for downloading data before training
        # For example: '/data/dataset/imagenet': 'obs://dataset/imagenet',
    },
    'output': {
        # Add path mapping here for uploading output after training
        # For example: './checkpoints': 'obs://outputs/checkpoints',
    },
}
